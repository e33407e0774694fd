// Build the BPF scheduler: compile src/bpf/main.bpf.c with clang (BPF_CLANG, >= 18), generate
// its libbpf skeleton and the Rust bindings of src/bpf/intf.h. Both land in OUT_DIR.
fn main() {
    scx_cargo::BpfBuilder::new()
        .expect("BPF builder (is clang >= 18 installed? set BPF_CLANG)")
        .enable_intf("src/bpf/intf.h", "bpf_intf.rs")
        .enable_skel("src/bpf/main.bpf.c", "bpf")
        .build()
        .expect("building the BPF scheduler failed");
}
