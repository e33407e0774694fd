// Build the BPF scheduler: compile src/bpf/main.bpf.c with clang (BPF_CLANG, >= 18), generate
// its libbpf skeleton and the Rust bindings of src/bpf/intf.h. Also compile the EEVDF core
// (src/bpf/eevdf.h and the headers it includes) for the host (src/bpf/host.c), with Rust
// bindings, for the unit tests. And the bench's tracer: src/bench/trace/trace.bpf.c with its own
// skeleton, and its bucket arithmetic (hist.h) compiled for the host tests.
use std::env;
use std::path::PathBuf;

fn main() {
    scx_cargo::BpfBuilder::new()
        .expect("BPF builder (is clang >= 18 installed? set BPF_CLANG)")
        .enable_intf("src/bpf/intf.h", "bpf_intf.rs")
        .enable_skel("src/bpf/main.bpf.c", "bpf")
        .build()
        .expect("building the BPF scheduler failed");

    scx_cargo::BpfBuilder::new()
        .expect("BPF builder for the tracer")
        .enable_skel("src/bench/trace/trace.bpf.c", "trace")
        .build()
        .expect("building the bench's tracer failed");
    cc::Build::new()
        .file("src/bench/trace/host.c")
        .compile("trace_host");

    cc::Build::new()
        .file("src/bpf/host.c")
        .define("LAB_HOST", None)
        .flag_if_supported("-Wno-unused-function")
        .compile("eevdf_host");
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    bindgen::Builder::default()
        .header("src/bpf/host.h")
        .clang_arg("-DLAB_HOST")
        .allowlist_function("host_.*")
        .allowlist_type("lab_.*")
        .allowlist_var("LAB_.*")
        .allowlist_var("lab_host_.*")
        .derive_default(true)
        .generate()
        .expect("bindgen of src/bpf/host.h")
        .write_to_file(out.join("eevdf_host.rs"))
        .expect("writing eevdf_host.rs");
    // Every header under src/bpf feeds the BPF object, the host library or both.
    println!("cargo:rerun-if-changed=src/bpf");
    println!("cargo:rerun-if-changed=src/bench/trace");
}
