# Shared helpers of the scripts/ folder. Sourced, never run.
# shellcheck shell=bash

LAB_CACHE=${LAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/scx_eevdf_lab}
export LAB_CACHE

log() { printf '[lab] %s\n' "$*" >&2; }
die() { printf '[lab] error: %s\n' "$*" >&2; exit 1; }

LAB_TARGET=x86_64-unknown-linux-gnu

# The environment every cargo call of the project uses: clang for the BPF object (Debian
# installs clang-19 under that name only), static libelf/zlib, and a static C runtime. With an
# explicit --target the RUSTFLAGS stay off build scripts and proc macros.
lab_cargo_env() {
	if [ -z "${BPF_CLANG:-}" ]; then
		if command -v clang-19 >/dev/null; then export BPF_CLANG=clang-19
		elif command -v clang >/dev/null; then export BPF_CLANG=clang
		else die "no clang found: run scripts/setup (or set BPF_CLANG)"; fi
	fi
	if [ -z "${LIBBPF_SYS_LIBRARY_PATH:-}" ]; then
		local multiarch
		multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
		export LIBBPF_SYS_LIBRARY_PATH=/usr/lib/$multiarch
	fi
	export RUSTFLAGS="${RUSTFLAGS:-} -C target-feature=+crt-static"
}
