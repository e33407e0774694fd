//! The kernel's BPF run-time statistics (`BPF_ENABLE_STATS`): each program's call count and the
//! time spent in it, for the daemon's `--bpf-stats` and the bench's.

use anyhow::{Result, bail};
use libbpf_rs::libbpf_sys;
use std::collections::BTreeMap;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// Turns on the kernel's BPF run-time statistics for as long as the returned fd is open. They
/// cost two clock reads per program run.
pub fn enable() -> Result<OwnedFd> {
    // SAFETY: a plain syscall wrapper; a non-negative result is an fd we now own.
    let fd = unsafe { libbpf_sys::bpf_enable_stats(libbpf_sys::BPF_STATS_RUN_TIME) };
    if fd < 0 {
        bail!(
            "cannot enable BPF run-time statistics: {}",
            std::io::Error::from_raw_os_error(-fd)
        );
    }
    // SAFETY: see above.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The kernel's bpf_prog_info of a loaded program (run_cnt, run_time_ns, verified_insns...).
pub fn prog_info(fd: BorrowedFd) -> Option<libbpf_sys::bpf_prog_info> {
    let mut info = libbpf_sys::bpf_prog_info::default();
    let mut len = std::mem::size_of_val(&info) as u32;
    // SAFETY: info is a zeroed bpf_prog_info of the size we pass.
    let ret = unsafe {
        libbpf_sys::bpf_obj_get_info_by_fd(
            fd.as_raw_fd(),
            (&mut info as *mut libbpf_sys::bpf_prog_info).cast(),
            &mut len,
        )
    };
    (ret == 0).then_some(info)
}

/// Calls and run time of one program (cumulative since it was loaded).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Cost {
    pub calls: u64,
    pub ns: u64,
}

/// Every loaded struct_ops program (a sched_ext scheduler's callbacks), by program id, with its
/// name (as the kernel keeps it: at most 15 characters) and cost so far.
pub fn struct_ops_costs() -> BTreeMap<u32, (String, Cost)> {
    let mut out = BTreeMap::new();
    let mut id = 0u32;
    loop {
        // SAFETY: plain syscall wrappers; the fd is owned right after it is returned.
        if unsafe { libbpf_sys::bpf_prog_get_next_id(id, &mut id) } != 0 {
            break;
        }
        let fd = unsafe { libbpf_sys::bpf_prog_get_fd_by_id(id) };
        if fd < 0 {
            continue;
        }
        // SAFETY: see above.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let Some(info) = prog_info(fd.as_fd()) else {
            continue;
        };
        if info.type_ != libbpf_sys::BPF_PROG_TYPE_STRUCT_OPS {
            continue;
        }
        let name: Vec<u8> = info
            .name
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        out.insert(
            id,
            (
                String::from_utf8_lossy(&name).into_owned(),
                Cost {
                    calls: info.run_cnt,
                    ns: info.run_time_ns,
                },
            ),
        );
    }
    out
}

/// What each program present in both `a` and `b` cost between the two readings, by name
/// (programs of one name are summed).
pub fn delta(
    a: &BTreeMap<u32, (String, Cost)>,
    b: &BTreeMap<u32, (String, Cost)>,
) -> BTreeMap<String, Cost> {
    let mut out: BTreeMap<String, Cost> = BTreeMap::new();
    for (id, (name, cb)) in b {
        let Some((_, ca)) = a.get(id) else { continue };
        let e = out.entry(name.clone()).or_default();
        e.calls += cb.calls.saturating_sub(ca.calls);
        e.ns += cb.ns.saturating_sub(ca.ns);
    }
    out.retain(|_, c| c.calls > 0);
    out
}

/// The verifier's logs of some programs, for finding where verification spends its time:
/// `LAB_VERIFIER_LOG=DIR` (with `LAB_VERIFIER_LOG_PROGS=name,...`, default every program) makes
/// the load keep each program's verifier log and write a summary of it to `DIR/<program>.lines`:
/// the instructions walked per global function and per source line (`LAB_VERIFIER_LOG_LEVEL=2`,
/// the default), or only the verifier's statistics and time (`LAB_VERIFIER_LOG_LEVEL=4`), in the
/// log's tail, `DIR/<program>.tail`; with `LAB_VERIFIER_LOG_RAW=1` the whole log too, in
/// `DIR/<program>.log`.
pub struct VerifierLogs {
    dir: std::path::PathBuf,
    bufs: Vec<(String, Vec<u8>)>,
}

/// Room for one program's log, the kernel's limit (just under 1 GiB): a level-2 log takes about
/// 1.8 KB per instruction walked (549 MB for lab_enqueue's 309k); a longer one fails the load
/// with ENOSPC.
const VERIFIER_LOG_SIZE: usize = (u32::MAX >> 2) as usize;

impl VerifierLogs {
    /// Sets up the logs on the programs of `obj` before it is loaded; None without the variable.
    pub fn request(obj: &mut libbpf_rs::OpenObject) -> Option<Self> {
        let dir = std::path::PathBuf::from(std::env::var_os("LAB_VERIFIER_LOG")?);
        let only = std::env::var("LAB_VERIFIER_LOG_PROGS").ok();
        // 2: every instruction walked; 4: the statistics only (with the verification time).
        let level = std::env::var("LAB_VERIFIER_LOG_LEVEL")
            .ok()
            .and_then(|l| l.parse().ok())
            .unwrap_or(2);
        let wanted = |n: &str| only.as_deref().is_none_or(|o| o.split(',').any(|x| x == n));
        let mut bufs = Vec::new();
        for mut prog in obj.progs_mut() {
            let name = prog.name().to_string_lossy().into_owned();
            if !wanted(&name) {
                continue;
            }
            // calloc()'d pages: memory is used only as far as the kernel writes.
            let mut buf = vec![
                0u8;
                if level & 3 != 0 {
                    VERIFIER_LOG_SIZE
                } else {
                    1 << 16
                }
            ];
            prog.set_log_level(level);
            let raw = libbpf_rs::AsRawLibbpf::as_libbpf_object(&prog).as_ptr();
            // SAFETY: the buffer lives in `self` until after the load, which writes into it.
            unsafe {
                libbpf_sys::bpf_program__set_log_buf(raw, buf.as_mut_ptr().cast(), buf.len() as _)
            };
            bufs.push((name, buf));
        }
        Some(Self { dir, bufs })
    }

    /// Writes, after the load (also a failed one), each log's summary (`summarize_log()`, in
    /// `DIR/<program>.lines`) and its last 64 KiB (`DIR/<program>.tail`).
    pub fn write(self) -> Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        for (name, buf) in &self.bufs {
            let len = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
            let out = summarize_log(&String::from_utf8_lossy(&buf[..len]), len);
            std::fs::write(self.dir.join(format!("{name}.lines")), out)?;
            let tail = len.saturating_sub(65536);
            std::fs::write(self.dir.join(format!("{name}.tail")), &buf[tail..len])?;
            if std::env::var_os("LAB_VERIFIER_LOG_RAW").is_some() {
                std::fs::write(self.dir.join(format!("{name}.log")), &buf[..len])?;
            }
        }
        Ok(())
    }
}

/// The summary of a level-2 verifier log: the instructions walked in all, per global function
/// (its "Validating NAME()" section; "(main)" before the first) and per source line (the last
/// "; ... @ FILE:LINE" line before them), most first.
fn summarize_log(text: &str, len: usize) -> String {
    let mut per_line: BTreeMap<&str, u64> = BTreeMap::new();
    let mut per_func: BTreeMap<&str, u64> = BTreeMap::new();
    let (mut at, mut func, mut total) = ("?", "(main)", 0u64);
    for l in text.lines() {
        if let Some(r) = l.strip_prefix("Validating ") {
            func = r.split('(').next().unwrap_or(r);
        } else if let Some(i) = l.strip_prefix("; ").and_then(|r| r.rfind(" @ ")) {
            at = &l[i + 5..];
        } else if l
            .split_once(": (")
            .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        {
            *per_line.entry(at).or_default() += 1;
            *per_func.entry(func).or_default() += 1;
            total += 1;
        }
    }
    let mut out = format!("{total} instructions walked in {len} bytes of log\n");
    for (k, n) in &per_func {
        out += &format!("{n:>9} in {k}()\n");
    }
    let mut v: Vec<_> = per_line.into_iter().collect();
    v.sort_by_key(|e| std::cmp::Reverse(e.1));
    for (k, n) in v {
        out += &format!("{n:>9} {k}\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_keeps_programs_seen_twice_and_sums_names() {
        let c = |calls, ns| Cost { calls, ns };
        let a = BTreeMap::from([
            (1, ("enqueue".to_string(), c(10, 100))),
            (2, ("dispatch".to_string(), c(5, 50))),
            (3, ("tick".to_string(), c(7, 70))),
        ]);
        let b = BTreeMap::from([
            (1, ("enqueue".to_string(), c(15, 160))),
            (2, ("dispatch".to_string(), c(5, 50))),
            (4, ("running".to_string(), c(3, 30))),
            (5, ("enqueue".to_string(), c(2, 20))),
        ]);
        let d = delta(&a, &b);
        // dispatch did not run; running and the second enqueue were not there before.
        assert_eq!(d, BTreeMap::from([("enqueue".to_string(), c(5, 60))]));
    }

    #[test]
    fn verifier_log_summary() {
        let log = "func#0 @0\n0: R1=ctx() R10=fp0\n; int x = 1; @ main.bpf.c:10\n0: (b7) r0 = 1\n\
                   1: (95) exit\nValidating f() func#1...\n; return a; @ queue.bpf.h:7\n\
                   2: (bf) r0 = r1\n2: R0=scalar()\n3: (95) exit\n";
        let s = summarize_log(log, log.len());
        let want = [
            "4 instructions walked in",
            "        2 in (main)()",
            "        2 in f()",
            "        2 main.bpf.c:10",
            "        2 queue.bpf.h:7",
        ];
        for w in want {
            assert!(s.contains(w), "{w:?} not in {s}");
        }
    }
}
