//! Drives the real binary: a short bench on the host kernel with the built-in EEVDF only (no
//! sched_ext and no root needed), with worker processes and an A/A arm, and checks what it
//! writes. No assertion depends on how fast the host is.

use std::path::PathBuf;
use std::process::Command;

/// One bench at a time: benches run as root share the journal in /run/scx_eevdf_lab, and a
/// second one refuses to start while the first runs.
fn one_bench() -> std::sync::MutexGuard<'static, ()> {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE.lock().unwrap_or_else(|e| e.into_inner())
}

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_scx_eevdf_lab")
}

fn tempdir(tag: &str) -> PathBuf {
    std::env::temp_dir().join(format!("lab-bench-{tag}-{}", std::process::id()))
}

#[test]
fn a_host_session_writes_a_valid_report() {
    let _one = one_bench();
    let dir = tempdir("it");
    let out = Command::new(bin())
        .args([
            "bench",
            "eevdf",
            "--aa",
            "-w",
            "pingpong,messaging:groups=1:fds=4:loops=20",
            "-n",
            "2",
            "--warmup",
            "0.05",
            "--window",
            "0.3",
            "--processes",
            "--seed",
            "3",
            "--bootstrap",
            "500",
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("eevdf (A/A)"), "{table}");
    assert!(
        table.contains("handoffs_per_s") && table.contains("msgs_per_s"),
        "{table}"
    );
    // No terminal: one line per run instead of a progress bar.
    assert!(stderr.contains("run   0:"), "{stderr}");

    let v = Command::new(bin())
        .args(["bench", "--validate"])
        .arg(dir.join("bench.json"))
        .output()
        .unwrap();
    let msg = String::from_utf8_lossy(&v.stdout);
    assert!(
        v.status.success(),
        "{msg}{}",
        String::from_utf8_lossy(&v.stderr)
    );
    assert!(msg.contains("2 arms, 2 workloads"), "{msg}");

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("bench.json")).unwrap()).unwrap();
    assert_eq!(json["seed"], 3);
    assert_eq!(json["processes"], true);
    assert_eq!(json["order"].as_array().unwrap().len(), 4);
    let csv = std::fs::read_to_string(dir.join("runs.csv")).unwrap();
    assert!(csv.starts_with("index,round,arm,workload,"));
    for svg in ["pingpong.svg", "messaging_groups-1_fds-4_loops-20.svg"] {
        let s = std::fs::read_to_string(dir.join(svg)).unwrap();
        assert!(s.contains("<svg"), "{svg}");
    }

    // `bench compare`: one file comes back with the session's table; two are merged, with the
    // second session's arms tagged and compared with the first's, into files that validate.
    let json = dir.join("bench.json");
    let one = Command::new(bin())
        .args(["bench", "compare"])
        .arg(&json)
        .output()
        .unwrap();
    let again = String::from_utf8_lossy(&one.stdout);
    assert!(
        one.status.success(),
        "{}",
        String::from_utf8_lossy(&one.stderr)
    );
    let body = |t: &str| t[t.find("\npingpong").unwrap()..].to_string();
    assert_eq!(body(&again), body(&table));
    let merged_dir = tempdir("merged");
    let two = Command::new(bin())
        .args(["bench", "compare"])
        .args([&json, &json])
        .arg("--out")
        .arg(&merged_dir)
        .output()
        .unwrap();
    let merged = String::from_utf8_lossy(&two.stdout);
    assert!(
        two.status.success(),
        "{}",
        String::from_utf8_lossy(&two.stderr)
    );
    assert!(merged.contains("bench compare of 2 sessions"), "{merged}");
    assert!(merged.contains("eevdf @2 vs eevdf @1 (×)"), "{merged}");
    let v = Command::new(bin())
        .args(["bench", "--validate"])
        .arg(merged_dir.join("bench.json"))
        .output()
        .unwrap();
    let msg = String::from_utf8_lossy(&v.stdout);
    assert!(
        v.status.success() && msg.contains("4 arms, 2 workloads"),
        "{msg}"
    );
    let bad = Command::new(bin())
        .args(["bench", "compare"])
        .arg(dir.join("runs.csv"))
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("is not JSON"));
    std::fs::remove_dir_all(&merged_dir).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A sweep is one workload per point, with a table of one line per point and a plot; a `cmd`
/// workload takes its number from the command's output.
#[test]
fn sweeps_and_commands_run_as_workloads() {
    let _one = one_bench();
    let dir = tempdir("sweep");
    let out = Command::new(bin())
        .args([
            "bench",
            "eevdf",
            "-w",
            "messaging:groups=1,2:fds=2:loops=5,cmd:'echo took 7.5 ms, ok':metric='took ([0-9.]+) ms':better=lower:name=ms",
            "-n",
            "2",
            "--warmup",
            "0",
            "--seed",
            "1",
            "--bootstrap",
            "200",
            "--out",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stderr}");
    assert!(
        table.contains("sweep messaging:groups=1,2:fds=2:loops=5 — seconds"),
        "{table}"
    );
    let rows: Vec<&str> = table
        .lines()
        .skip_while(|l| !l.starts_with("sweep "))
        .filter(|l| l.starts_with("| 1 ") || l.starts_with("| 2 "))
        .collect();
    assert_eq!(rows.len(), 2, "{table}");
    assert!(
        table.contains("messaging:groups=2:fds=2:loops=5 —"),
        "{table}"
    );
    let svg = std::fs::read_to_string(dir.join("sweep_messaging_groups-1_2_fds-2_loops-5.svg"))
        .expect("the sweep's plot");
    assert!(svg.contains("<svg"));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("bench.json")).unwrap()).unwrap();
    assert_eq!(json["workloads"][1]["sweep"]["value"], "2");
    let cmd_run = json["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["workload_label"].as_str().unwrap().starts_with("cmd:") && r["valid"] == true)
        .expect("a valid cmd run");
    assert_eq!(cmd_run["measurement"]["metrics"]["ms"], 7.5);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_input_fails_before_anything_runs() {
    let _one = one_bench();
    for (args, want) in [
        (vec!["bench", "cfs"], "unknown arm"),
        (vec!["bench", "eevdf:NO_SUCH_FLAG"], "NO_SUCH_FLAG"),
        (vec!["bench", "eevdf", "-w", "nosuch"], "unknown workload"),
        (vec!["bench", "eevdf", "eevdf"], "given twice"),
        (
            vec!["bench", "--fidelity", "DELAY_ZERO", "eevdf"],
            "give no ARM",
        ),
        (
            vec!["bench", "eevdf", "--processes", "-w", "schlat"],
            "threads only",
        ),
        (
            vec!["bench", "eevdf", "-w", "messaging:groups=1,2:loops=1,2"],
            "only one parameter",
        ),
        (
            vec!["bench", "eevdf", "-w", "messaging:groups=1,x"],
            "at groups=x",
        ),
        (
            vec!["bench", "eevdf", "-w", "cmd:'true':better=lower"],
            "metric=REGEX is required",
        ),
        (
            vec!["bench", "eevdf", "-w", "pingpong,pingpong"],
            "given twice",
        ),
    ] {
        let out = Command::new(bin()).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

/// Bad cgroup keys and composites are refused as bad input (exit status 2) before anything is
/// created: no group under the cgroup root, no output folder.
#[test]
fn bad_cgroup_keys_and_composites_fail_before_anything_is_created() {
    let _one = one_bench();
    let root = tempdir("cgroot-bad");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("cgroup.controllers"), "cpu io memory\n").unwrap();
    std::fs::write(root.join("cgroup.subtree_control"), "").unwrap();
    let out_dir = tempdir("cg-bad-out");
    for (w, want) in [
        ("pingpong:cgroup=a/b", "'/' is not allowed"),
        ("pingpong:cgroup=..", "starts with a letter or a digit"),
        ("pingpong:cgroup=", "needs a name"),
        ("pingpong:cpu_weight=100", "needs cgroup=NAME"),
        (
            "pingpong:cgroup=a:cpu_weight=0",
            "out of range: allowed 1..=10000",
        ),
        ("pingpong:cgroup=a:cpu_weight=10001", "out of range"),
        (
            "pingpong:cgroup=a:cpu_idle=1:cpu_weight=200",
            "takes no cpu_weight",
        ),
        ("pingpong:cgroup=a:cpu_max=1/1", "period must be"),
        ("pingpong+", "nothing follows a '+'"),
        ("+pingpong", "nothing comes before the '+'"),
        ("pingpong+nosuch:x=1", "after '+' is not a workload"),
        (
            "pingpong:cgroup=a:cpu_weight=1+pipe-stream:cgroup=a:cpu_weight=2",
            "different settings",
        ),
        (
            "schlat:workers=1,2+pingpong:pairs=1,2",
            "only one parameter",
        ),
    ] {
        let out = Command::new(bin())
            .args(["bench", "eevdf", "-w", w, "--out"])
            .arg(&out_dir)
            .env("LAB_CGROUP_ROOT", &root)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{w}: {err}");
        assert_eq!(err.lines().count(), 1, "{w}: {err}");
        assert!(err.contains(want), "{w}: {err}");
        assert!(!out_dir.exists(), "{w}: an output folder was created");
        let entries: Vec<_> = std::fs::read_dir(&root).unwrap().collect();
        assert_eq!(
            entries.len(),
            2,
            "{w}: something was created under the cgroup root"
        );
    }
    std::fs::remove_dir_all(&root).unwrap();
}

/// Without cgroup v2 at /sys/fs/cgroup, a workload with cgroup= is refused with the remedy,
/// before anything is changed.
#[test]
fn a_cgroup_workload_needs_cgroup_v2() {
    let _one = one_bench();
    let v2 = std::fs::read_to_string("/proc/self/mounts")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split_whitespace().nth(1) == Some("/sys/fs/cgroup") && l.contains("cgroup2"));
    if v2 {
        return; // this host has it: the sessions below use a stand-in folder instead
    }
    let out = Command::new(bin())
        .args(["bench", "eevdf", "-w", "pingpong:cgroup=a", "--out"])
        .arg(tempdir("cg-v1-out"))
        .env_remove("LAB_CGROUP_ROOT")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("cgroup v2 is not mounted at /sys/fs/cgroup") || err.contains("root"),
        "{err}"
    );
    assert!(!tempdir("cg-v1-out").exists());
}

/// A composite of two parts in cgroups, on a folder standing in for the cgroup root
/// (LAB_CGROUP_ROOT): each part reports its own metrics, the report shows each part's group and
/// weight, and the groups, the bench's folder and the cpu controller it turned on are gone
/// afterwards. Needs root (the bench journals what it creates).
#[test]
fn a_composite_in_cgroups_reports_each_part_and_cleans_up() {
    let _one = one_bench();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return;
    }
    let root = tempdir("cgroot");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("cgroup.controllers"), "cpu io memory\n").unwrap();
    std::fs::write(root.join("cgroup.subtree_control"), "").unwrap();
    let dir = tempdir("cg-out");
    let out = Command::new(bin())
        .args([
            "bench",
            "eevdf",
            "-w",
            "pingpong:cgroup=lat:cpu_weight=300+messaging:groups=1:fds=2:loops=1000:cgroup=batch",
            "-n",
            "2",
            "--warmup",
            "0.05",
            "--window",
            "0.3",
            "--seed",
            "2",
            "--bootstrap",
            "200",
            "--no-plots",
            "--out",
        ])
        .arg(&dir)
        .env("LAB_CGROUP_ROOT", &root)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stderr}\n{table}");
    for want in [
        "2 parts at once, in one window, the time-based ones until the fixed-work ones end",
        "lat: pingpong — ",
        "; cgroup lat, cpu.weight 300",
        "batch: messaging — ",
        "; cgroup batch",
        "| lat/handoffs_per_s ",
        "| batch/seconds ",
    ] {
        assert!(table.contains(want), "{want}: {table}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("bench.json")).unwrap()).unwrap();
    let parts = json["workloads"][0]["parts"].as_array().unwrap();
    assert_eq!(parts[0]["cgroup"]["cpu_weight"], 300);
    assert_eq!(parts[1]["cgroup"]["name"], "batch");
    assert!(
        parts[1]["cgroup_path"]
            .as_str()
            .unwrap()
            .ends_with("scx_eevdf_lab.bench/batch")
    );
    let valid = json["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["valid"] == true && r["discarded"] == false)
        .count();
    assert_eq!(valid, 2, "{table}");
    let csv = std::fs::read_to_string(dir.join("runs.csv")).unwrap();
    assert!(csv.contains(",lat/handoffs_per_s,") && csv.contains(",batch/msgs_per_s,"));
    // Everything the bench created is gone; the controller it turned on is off again (a plain
    // file keeps the last write).
    assert!(!root.join("scx_eevdf_lab.bench").exists());
    assert_eq!(
        std::fs::read_to_string(root.join("cgroup.subtree_control")).unwrap(),
        "-cpu"
    );
    assert!(!std::path::Path::new("/run/scx_eevdf_lab/bench.journal").exists());
    std::fs::remove_dir_all(&root).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Without a running lab (no sched_ext here, or no scheduler attached), `features` and
/// `diff-kernel` still show the kernel's line, read from a fake debugfs folder.
#[test]
fn features_and_diff_kernel_work_without_the_lab() {
    let _one = one_bench();
    let dir = tempdir("debugfs");
    std::fs::create_dir_all(&dir).unwrap();
    let line = "PLACE_LAG RUN_TO_PARITY NO_DELAY_ZERO";
    std::fs::write(dir.join("features"), format!("{line} \n")).unwrap();
    let run = |args: &[&str], debugfs: &std::path::Path| {
        Command::new(bin())
            .args(args)
            .env("LAB_DEBUGFS_SCHED", debugfs)
            .output()
            .unwrap()
    };

    let out = run(&["features"], &dir);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout.trim(), line);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("kernel's own features"), "{stderr}");

    let out = run(&["diff-kernel"], &dir);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(2), "nothing compared: {stderr}");
    assert!(stderr.contains("nothing to compare"), "{stderr}");
    assert_eq!(stdout.trim(), format!("kernel: {line}"));

    // Neither side readable: a failure that names the missing file.
    let gone = dir.join("nosuch");
    for args in [&["features"][..], &["diff-kernel"][..]] {
        let out = run(args, &gone);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(stderr.contains("nosuch/features is missing"), "{stderr}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_workload_list_shows_keys_defaults_and_metrics() {
    let _one = one_bench();
    let out = Command::new(bin())
        .args(["bench", "--list"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    for want in [
        "pingpong",
        "pairs=1",
        "handoffs_per_s",
        "hackbench",
        "mode=process",
        "  cgroup= ",
        "  cpu_weight= ",
        "A+B runs workloads A and B at once",
    ] {
        assert!(text.contains(want), "{want}: {text}");
    }
    let help = Command::new(bin())
        .args(["bench", "--help"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(
        text.contains("cgroup=NAME") && text.contains("cpu_weight=1..10000"),
        "{text}"
    );
}

#[test]
fn completions_and_the_man_page_cover_the_subcommands() {
    let _one = one_bench();
    for args in [
        &["completions", "bash"][..],
        &["completions", "zsh"][..],
        &["completions", "fish"][..],
        &["man"][..],
    ] {
        let out = Command::new(bin()).args(args).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains("bench"), "{args:?}: {text}");
    }
    let out = Command::new(bin()).args(["man"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains(".TH scx_eevdf_lab"));
}
