//! `scx_eevdf_lab spawn`: create many tasks at once and many short-lived ones, and say how many
//! could not be created or did not run -- the guest tests' check that the scheduler's per-task
//! bookkeeping never makes a fork fail.

use anyhow::{Result, bail};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

#[derive(Debug, clap::Args)]
pub struct SpawnArgs {
    /// Threads alive at once: each is created, waits until all exist, then runs briefly and exits.
    #[arg(long, default_value_t = 0)]
    pub threads: u64,
    /// Processes the threads are spread over (threads of one process share one address space,
    /// whose lock serializes their creation).
    #[arg(long, default_value_t = 1)]
    pub procs: u64,
    /// Short-lived processes, forked and reaped by a few parallel forkers.
    #[arg(long, default_value_t = 0)]
    pub forks: u64,
    /// Parallel forkers.
    #[arg(long, default_value_t = 4)]
    pub forkers: u64,
    /// CPU hogs (threads that may run anywhere) to run for --secs, each sampled every 50 ms:
    /// its CPU time and the longest stretch in which it made no progress.
    #[arg(long, default_value_t = 0)]
    pub hogs: u64,
    /// With --hogs: one more hog, SCHED_FIFO priority 50, pinned to this CPU.
    #[arg(long)]
    pub fifo_cpu: Option<usize>,
    /// How long the hogs run, in seconds.
    #[arg(long, default_value_t = 10)]
    pub secs: u64,
}

/// The stack of each thread: small, so that tens of thousands fit in a small VM.
const THREAD_STACK: usize = 64 * 1024;

/// How long the threads wait for each other at most before running anyway.
const GATHER_TIMEOUT: Duration = Duration::from_secs(600);

pub fn run(args: &SpawnArgs) -> Result<bool> {
    let mut ok = true;
    if args.threads > 0 {
        let (created, failed, ran, secs) = threads_in_procs(args.threads, args.procs.max(1))?;
        println!(
            "threads: {created} created, {failed} failed, {ran} ran, in {secs:.1} s (all alive at once)"
        );
        ok &= failed == 0 && ran == created;
    }
    if args.forks > 0 {
        let (done, failed, secs) = forks(args.forks, args.forkers.max(1))?;
        println!("forks: {done} reaped, {failed} failed, in {secs:.1} s");
        ok &= failed == 0 && done == args.forks;
    }
    if args.hogs > 0 {
        let r = hogs(
            args.hogs,
            args.fifo_cpu,
            Duration::from_secs(args.secs.max(1)),
        )?;
        let ms = |ns: u64| ns as f64 / 1e6;
        let cpu: Vec<String> = r.iter().map(|h| format!("{:.0}", ms(h.cpu_ns))).collect();
        let cpus: Vec<String> = r.iter().map(|h| h.cpus.to_string()).collect();
        let worst = r.iter().max_by_key(|h| h.longest_stall_ns);
        let stall = worst.map_or(0, |h| h.longest_stall_ns);
        let on = worst
            .and_then(|h| h.stall_cpu)
            .map_or(String::new(), |c| format!(" (on CPU {c})"));
        let least = r.iter().map(|h| h.cpu_ns).min().unwrap_or(0);
        println!("hogs: cpu ms {}", cpu.join(" "));
        println!("hogs: cpus seen {}", cpus.join(" "));
        println!(
            "hogs: least served {:.0} ms, longest stall {:.0} ms{on}",
            ms(least),
            ms(stall)
        );
    }
    Ok(ok)
}

/// What one hog got: CPU time (schedstat, ns), how many CPUs it was seen on, and the longest
/// stretch between two samples in which its CPU time did not grow, with the CPU it waited on.
struct Hog {
    cpu_ns: u64,
    cpus: usize,
    longest_stall_ns: u64,
    stall_cpu: Option<usize>,
}

/// A thread's time on CPU in ns (the first field of its schedstat).
fn thread_schedstat(tid: i32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok()?;
    s.split_whitespace().next()?.parse().ok()
}

/// The CPU a thread last ran on (field 39 of /proc/self/task/TID/stat).
fn thread_cpu(tid: i32) -> Option<usize> {
    let s = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    rest.split_whitespace().nth(36)?.parse().ok()
}

/// `n` spinning threads (and a SCHED_FIFO one pinned to `fifo_cpu`) for `dur`, sampled every
/// 50 ms from this thread, which raises itself to SCHED_FIFO 60 so that the samples are taken
/// on time even when every CPU is busy.
fn hogs(n: u64, fifo_cpu: Option<usize>, dur: Duration) -> Result<Vec<Hog>> {
    use std::sync::atomic::AtomicBool;
    let stop = Arc::new(AtomicBool::new(false));
    let spin = |stop: Arc<AtomicBool>, tids: std::sync::mpsc::Sender<i32>| {
        move || {
            // SAFETY: gettid(2) has no preconditions.
            let _ = tids.send(unsafe { libc::gettid() });
            let mut x = 0u64;
            while !stop.load(Ordering::Relaxed) {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        }
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let mut handles = Vec::new();
    for _ in 0..n {
        handles.push(std::thread::spawn(spin(stop.clone(), tx.clone())));
    }
    let tids: Vec<i32> = (0..n).map(|_| rx.recv()).collect::<Result<_, _>>()?;
    let fifo = |prio: i32| -> Result<()> {
        let param = libc::sched_param {
            sched_priority: prio,
        };
        // SAFETY: sched_setscheduler(2) on the calling thread with a valid parameter.
        if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
            bail!("SCHED_FIFO: {}", std::io::Error::last_os_error());
        }
        Ok(())
    };
    if let Some(cpu) = fifo_cpu {
        let (stop, tx) = (stop.clone(), tx.clone());
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<()>>();
        handles.push(std::thread::spawn(move || {
            // SAFETY: a zeroed cpu_set_t with one bit set, for the calling thread.
            let pinned = unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(cpu, &mut set);
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
            };
            let r = if pinned != 0 {
                Err(anyhow::anyhow!(
                    "pinning to CPU {cpu}: {}",
                    std::io::Error::last_os_error()
                ))
            } else {
                fifo(50)
            };
            let failed = r.is_err();
            let _ = ready_tx.send(r);
            if !failed {
                spin(stop, tx)();
            }
        }));
        ready_rx.recv()??;
        let _ = rx.recv();
    }
    fifo(60)?;
    let mut last: Vec<(u64, Instant)> = tids
        .iter()
        .map(|&t| (thread_schedstat(t).unwrap_or(0), Instant::now()))
        .collect();
    let mut stall = vec![0u64; tids.len()];
    let mut stall_cpu = vec![None; tids.len()];
    let mut seen = vec![0u128; tids.len()];
    let t0 = Instant::now();
    while t0.elapsed() < dur {
        std::thread::sleep(Duration::from_millis(50));
        for (i, &t) in tids.iter().enumerate() {
            let now = Instant::now();
            let cpu = thread_schedstat(t).unwrap_or(last[i].0);
            let on = thread_cpu(t);
            if let Some(c) = on.filter(|&c| c < 128) {
                seen[i] |= 1 << c;
            }
            if cpu > last[i].0 {
                last[i] = (cpu, now);
            } else {
                let waited = (now - last[i].1).as_nanos() as u64;
                if waited > stall[i] {
                    stall[i] = waited;
                    stall_cpu[i] = on;
                }
            }
        }
    }
    let cpu_ns: Vec<u64> = tids
        .iter()
        .enumerate()
        .map(|(i, &t)| thread_schedstat(t).unwrap_or(last[i].0))
        .collect();
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        let _ = h.join();
    }
    Ok((0..tids.len())
        .map(|i| Hog {
            cpu_ns: cpu_ns[i],
            cpus: seen[i].count_ones() as usize,
            longest_stall_ns: stall[i],
            stall_cpu: stall_cpu[i],
        })
        .collect())
}

/// `n` threads spread over `procs` child processes, all alive at once: each child creates its
/// share, says so, waits until every child is ready, then lets its threads run and exit.
/// Returns (created, failed, ran, seconds) summed over the children.
fn threads_in_procs(n: u64, procs: u64) -> Result<(u64, u64, u64, f64)> {
    use std::io::{Read, Write};
    use std::os::fd::FromRawFd;
    let t0 = Instant::now();
    let pipe = || -> Result<(std::fs::File, std::fs::File)> {
        let mut fds = [0; 2];
        // SAFETY: a plain pipe(2); both fds are owned by the Files below.
        if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
            bail!("pipe: {}", std::io::Error::last_os_error());
        }
        Ok(unsafe {
            (
                std::fs::File::from_raw_fd(fds[0]),
                std::fs::File::from_raw_fd(fds[1]),
            )
        })
    };
    let (mut ready_r, ready_w) = pipe()?;
    let (go_r, go_w) = pipe()?;
    let (mut res_r, res_w) = pipe()?;
    let mut children = Vec::new();
    for i in 0..procs {
        let share = n / procs + u64::from(i < n % procs);
        // SAFETY: this process is single-threaded here; the child only uses its own threads
        // and the inherited pipes, then _exits.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            bail!("fork: {}", std::io::Error::last_os_error());
        }
        if pid == 0 {
            use std::os::fd::AsRawFd;
            // Only the parent keeps the go pipe's write end: its close is the start signal.
            // SAFETY: closing inherited copies this child does not use.
            unsafe {
                libc::close(go_w.as_raw_fd());
                libc::close(ready_r.as_raw_fd());
                libc::close(res_r.as_raw_fd());
            }
            let (mut ready_w, mut go_r, mut res_w) = (&ready_w, &go_r, &res_w);
            let (created, failed, ran) = threads(share, || {
                let _ = ready_w.write_all(b"r");
                let mut b = [0u8; 1];
                let _ = go_r.read(&mut b);
            });
            let _ = writeln!(res_w, "{created} {failed} {ran}");
            unsafe { libc::_exit(0) };
        }
        children.push(pid);
    }
    drop((ready_w, res_w, go_r));
    let mut b = [0u8; 1];
    for _ in 0..procs {
        ready_r.read_exact(&mut b)?;
    }
    drop(go_w);
    let mut out = String::new();
    res_r.read_to_string(&mut out)?;
    for pid in children {
        let mut st = 0;
        // SAFETY: reaping our own children.
        unsafe { libc::waitpid(pid, &mut st, 0) };
    }
    let (mut created, mut failed, mut ran) = (0, 0, 0);
    for l in out.lines() {
        let v: Vec<u64> = l.split(' ').filter_map(|x| x.parse().ok()).collect();
        if let [c, f, r] = v[..] {
            (created, failed, ran) = (created + c, failed + f, ran + r);
        }
    }
    let missing = n - (created + failed).min(n);
    Ok((created, failed + missing, ran, t0.elapsed().as_secs_f64()))
}

/// Creates `n` threads that all exist at once, calls `all_created`, then lets them run and exit.
/// Returns (created, failed, ran).
fn threads(n: u64, all_created: impl FnOnce()) -> (u64, u64, u64) {
    let ran = Arc::new(AtomicU64::new(0));
    let gate = Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new()));
    let mut handles = Vec::with_capacity(n as usize);
    let mut failed = 0;
    for _ in 0..n {
        let (ran, gate) = (ran.clone(), gate.clone());
        let b = std::thread::Builder::new().stack_size(THREAD_STACK);
        match b.spawn(move || {
            let (lock, cv) = &*gate;
            let open = lock.lock().unwrap();
            let _open = cv
                .wait_timeout_while(open, GATHER_TIMEOUT, |o| !*o)
                .unwrap();
            drop(_open);
            // Run a little: every task gets the CPU at least once.
            let mut x = 0u64;
            for i in 0..1000 {
                x = x.wrapping_mul(31).wrapping_add(i);
            }
            std::hint::black_box(x);
            ran.fetch_add(1, Ordering::Relaxed);
        }) {
            Ok(h) => handles.push(h),
            Err(_) => failed += 1,
        }
    }
    let created = handles.len() as u64;
    all_created();
    {
        let (lock, cv) = &*gate;
        *lock.lock().unwrap() = true;
        cv.notify_all();
    }
    for h in handles {
        let _ = h.join();
    }
    (created, failed, ran.load(Ordering::Relaxed))
}

/// Forks `n` children that exit at once, `forkers` at a time. Returns (reaped, failed, seconds).
fn forks(n: u64, forkers: u64) -> Result<(u64, u64, f64)> {
    let t0 = Instant::now();
    let done = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let next = Arc::new(AtomicU64::new(0));
    let start = Arc::new(Barrier::new(forkers as usize));
    let workers: Vec<_> = (0..forkers)
        .map(|_| {
            let (done, failed, next, start) =
                (done.clone(), failed.clone(), next.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                while next.fetch_add(1, Ordering::Relaxed) < n {
                    // SAFETY: the child calls only _exit (async-signal-safe).
                    let pid = unsafe { libc::fork() };
                    if pid == 0 {
                        unsafe { libc::_exit(0) };
                    }
                    if pid < 0 {
                        failed.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    let mut status = 0;
                    // SAFETY: reaping our own child.
                    if unsafe { libc::waitpid(pid, &mut status, 0) } == pid
                        && libc::WIFEXITED(status)
                    {
                        done.fetch_add(1, Ordering::Relaxed);
                    } else {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    for w in workers {
        if w.join().is_err() {
            bail!("a forker panicked");
        }
    }
    Ok((
        done.load(Ordering::Relaxed),
        failed.load(Ordering::Relaxed),
        t0.elapsed().as_secs_f64(),
    ))
}
