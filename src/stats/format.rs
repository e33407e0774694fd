//! The monitor's text: one sample of [`Metrics`] as the lines `monitor` and `--stats` print
//! (dispatches and picks, preemptions by reason, placement, ghosts, selection, balancing,
//! groups, cpu.max, refusals, load signals, and a line per CPU's queue).

use super::Metrics;
use anyhow::Result;
use std::io::Write;

impl Metrics {
    /// Writes the sample as the monitor's lines.
    pub fn format<W: Write>(&self, w: &mut W) -> Result<()> {
        let pct = |a: u64, b: u64| {
            if b == 0 {
                0.0
            } else {
                100.0 * a as f64 / b as f64
            }
        };
        let searches = self.pick_search.max(1);
        writeln!(
            w,
            "dispatch {:>8}  kept running {:.1}%  missed {}  repicked {} | inserted: select {} enqueue {} preempt {}",
            self.dispatches,
            pct(self.dispatch_keep, self.dispatches),
            self.dispatch_miss,
            self.dispatch_repick,
            self.insert_select,
            self.insert_enqueue,
            self.insert_preempt
        )?;
        writeln!(
            w,
            "picks {:>8}  curr {:.1}% (protected {:.1}%)  buddy {:.1}%  leftmost {:.1}%  search {:.1}%  none {}",
            self.picks,
            pct(self.pick_curr, self.picks),
            pct(self.pick_protected, self.picks),
            pct(self.pick_buddy, self.picks),
            pct(self.pick_leftmost, self.picks),
            pct(self.pick_search, self.picks),
            self.pick_none
        )?;
        writeln!(
            w,
            "search  nodes/search {:.2}  lengths 1:{} 2:{} 3-4:{} 5-8:{} >8:{}",
            self.scan_nodes as f64 / searches as f64,
            self.scan_len_1,
            self.scan_len_2,
            self.scan_len_4,
            self.scan_len_8,
            self.scan_len_more
        )?;
        writeln!(
            w,
            "preempt wakeup {} short {} idle {} sync {} | tick: deadline {} protect {} | hrtick {} | enqueue {} | kept {} (protection trimmed {}) | lazy {} (at tick {})",
            self.preempt_wakeup,
            self.preempt_short,
            self.preempt_idle,
            self.preempt_sync,
            self.preempt_tick_deadline,
            self.preempt_tick_protect,
            self.preempt_hrtick,
            self.preempt_enqueue,
            self.wakeup_no_preempt,
            self.protect_update,
            self.preempt_lazy,
            self.preempt_lazy_tick
        )?;
        writeln!(
            w,
            "place   new {} lag+ {} lag- {} lag0 {} rel-deadline {} | new requests {}",
            self.place_initial,
            self.place_lag_pos,
            self.place_lag_neg,
            self.place_lag_zero,
            self.place_rel_deadline,
            self.deadline_new
        )?;
        writeln!(
            w,
            "ghosts  created {} picked {} requeued {} (re-placed {}, +lag {}) other {} | reweight {} yield {} overflow {}",
            self.ghost_created,
            self.ghost_picked,
            self.ghost_requeued,
            self.ghost_requeue_moved,
            self.ghost_requeue_pos,
            self.ghost_finalized_other,
            self.reweight,
            self.yields,
            self.sum_overflow
        )?;
        writeln!(
            w,
            "select  {} ghost {} cold {} fork {} (to idlest groups {}, node-local {}) wide {} | affine: node-local {} idle this {} idle prev {} weight this {} prev {}",
            self.select,
            self.select_ghost,
            self.select_wake_cold,
            self.select_fork,
            self.fork_idlest,
            self.fork_node_local,
            self.wake_wide,
            self.wa_node_local,
            self.wa_idle_this,
            self.wa_idle_prev,
            self.wa_weight_this,
            self.wa_prev
        )?;
        writeln!(
            w,
            "sibling target {} prev {} kthread {} recent {} smt {} idle core {} scan {} none {} (scan limited {}) | idle cores: set {} none found {}",
            self.sis_target,
            self.sis_prev,
            self.sis_kthread,
            self.sis_recent,
            self.sis_smt,
            self.sis_idle_core,
            self.sis_scan,
            self.sis_none,
            self.sis_scan_limited,
            self.idle_core_set,
            self.sis_idle_core_none
        )?;
        writeln!(
            w,
            "balance migrations {} newidle {} (gated {}, nothing to pull {}, too short {}) pulled: newidle {} periodic {} | nohz kicks {} idle balances {}",
            self.migrations,
            self.newidle,
            self.newidle_gated,
            self.newidle_idle,
            self.newidle_short,
            self.pull_newidle,
            self.pull_periodic,
            self.nohz_kick,
            self.nohz_balance
        )?;
        writeln!(
            w,
            "domains pulled: SMT {} MC {} PKG {} NUMA {} | active {} (asked for capacity {}) | failed passes {} | capacities updated {} (nohz kicks for them {})",
            self.lb_smt,
            self.lb_mc,
            self.lb_pkg,
            self.lb_numa,
            self.lb_active,
            self.lb_active_capacity,
            self.lb_failed,
            self.capacity_update,
            self.nohz_kick_capacity
        )?;
        writeln!(
            w,
            "cpus    taken by a higher class {} (idle CPUs kicked a tick later {}) | hotplug: online {} offline {} (entities moved {}, bound tasks to the global DSQ {})",
            self.cpu_release,
            self.release_kick,
            self.cpu_online,
            self.cpu_offline,
            self.hotplug_moved,
            self.hotplug_global
        )?;
        writeln!(
            w,
            "cgroups groups {} (made {} gone {}, counted as their parent {}) | moves {}",
            self.groups,
            self.cgroup_init,
            self.cgroup_exit,
            self.cgroup_flattened,
            self.cgroup_move
        )?;
        writeln!(
            w,
            "cpu.max periods {} throttled {} unthrottled {} | held {} rejoined {} let out {} in RCU {} | in the kernel at the tick {}",
            self.bw_period,
            self.bw_throttle,
            self.bw_unthrottle,
            self.limbo_held,
            self.limbo_released,
            self.limbo_forced,
            self.limbo_rcu,
            self.bw_kernel
        )?;
        writeln!(
            w,
            "refused affinity {} running {} ghost {} ineligible {} hot {} load {} pinned {}",
            self.pull_refused_affinity,
            self.pull_refused_running,
            self.pull_refused_delayed,
            self.pull_refused_ineligible,
            self.pull_refused_hot,
            self.pull_refused_load,
            self.pull_refused_pinned
        )?;
        writeln!(
            w,
            "pelt    attach {} detach {} remove {} blocked {}",
            self.pelt_attach, self.pelt_detach, self.pelt_remove, self.pelt_blocked
        )?;
        if self.dsq_scan_len_1
            + self.dsq_scan_len_2
            + self.dsq_scan_len_4
            + self.dsq_scan_len_8
            + self.dsq_scan_len_more
            > 0
        {
            let n = (self.dsq_scan_len_1
                + self.dsq_scan_len_2
                + self.dsq_scan_len_4
                + self.dsq_scan_len_8
                + self.dsq_scan_len_more)
                .max(1);
            writeln!(
                w,
                "dsqscan would-be DSQ scan: nodes/pick {:.2}  lengths 1:{} 2:{} 3-4:{} 5-8:{} >8:{}",
                self.dsq_scan_nodes as f64 / n as f64,
                self.dsq_scan_len_1,
                self.dsq_scan_len_2,
                self.dsq_scan_len_4,
                self.dsq_scan_len_8,
                self.dsq_scan_len_more
            )?;
        }
        if !self.callbacks.is_empty() {
            let parts: Vec<String> = self
                .callbacks
                .iter()
                .filter(|(_, c)| c.calls > 0)
                .map(|(k, c)| format!("{k} {:.0} ns x{}", c.ns as f64 / c.calls as f64, c.calls))
                .collect();
            writeln!(w, "bpf     {}", parts.join("  "))?;
        }
        for (cpu, q) in &self.cpus {
            writeln!(
                w,
                "cpu{cpu:<3}  V {:>14}  queued {:>3}  ghosts {:>3}  weight {:>7}  load {:>6}  runnable {:>5}  util {:>4}  util_est {:>4}  perf {:>4}  cap {:>4}",
                q.avg_vruntime,
                q.nr_queued,
                q.nr_delayed,
                q.sum_weight,
                q.load_avg,
                q.runnable_avg,
                q.util_avg,
                q.util_est,
                q.perf_target,
                q.capacity
            )?;
        }
        Ok(())
    }
}
