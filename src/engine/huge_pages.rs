//! Transparent huge pages for the engine's weights, not for the rest of the process.
//!
//! Generating a token streams through all of a model's weights; on 4 KiB pages the TLB misses cost
//! about 12% of generation speed, so the allocator's memory is advised for 2 MiB pages (mimalloc does
//! it for its arenas). A process that never loads a model gets nothing from them and pays for them: a
//! long eval holding many small values kept half-used 2 MiB pages, 11–14 MB more at its peak. So the
//! process starts with them off ([`off_until_a_model_loads`], from `main`), and loading a model turns
//! them back on ([`on_for_the_weights`]) before its weights are read. Elsewhere than Linux both do nothing.

/// Turns transparent huge pages off for this process (and the programs it starts, such as the code
/// assertions' workers) until a model is loaded.
pub fn off_until_a_model_loads() {
    set_disabled(true);
}

/// Turns transparent huge pages back on for this process, before a model's weights are read.
pub fn on_for_the_weights() {
    set_disabled(false);
}

/// Off before the first allocation: the runtime's first allocations, before `main`, would otherwise each
/// fault a 2 MiB page of the allocator's arena (2–3 MB more at an eval's peak, measured). A constructor
/// the loader runs before any Rust code of the binary; `main` says it again.
#[cfg(all(target_os = "linux", not(test)))]
#[used]
#[link_section = ".init_array"]
static OFF_BEFORE_MAIN: extern "C" fn() = {
    extern "C" fn off() {
        set_disabled(true);
    }
    off
};

#[cfg(target_os = "linux")]
fn set_disabled(disabled: bool) {
    // SAFETY: PR_SET_THP_DISABLE only sets or clears a flag of this process's memory map (which pages
    // the kernel may back with huge ones); it touches no memory of ours. An error (an old kernel) leaves
    // the setting as it was, which is only slower or larger, never wrong.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, libc::c_ulong::from(disabled), 0, 0, 0);
    }
}

#[cfg(not(target_os = "linux"))]
fn set_disabled(_disabled: bool) {}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// The process's flag as the kernel shows it (`THP_enabled` in `/proc/self/status`).
    fn enabled() -> Option<bool> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let line = status.lines().find_map(|l| l.strip_prefix("THP_enabled:"))?;
        Some(line.trim() == "1")
    }

    #[test]
    fn huge_pages_are_off_until_a_model_loads_then_on() {
        if enabled().is_none() {
            eprintln!("this kernel does not show THP_enabled: nothing to check");
            return;
        }
        off_until_a_model_loads();
        assert_eq!(enabled(), Some(false));
        on_for_the_weights();
        assert_eq!(enabled(), Some(true));
    }
}
