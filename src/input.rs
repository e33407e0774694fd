//! Errors in what the user typed, and how every error reaches the terminal.
//!
//! Bad input (an unknown feature, an out-of-range tunable, a malformed arm or workload, an
//! option out of bounds) is refused before anything is changed and exits with status 2, as
//! clap's own usage errors do; 1 means a command that was understood but failed. Every error
//! is printed as one line of bounded length, so that an oversized argument echoed back in a
//! message still gives a readable line.

use std::fmt;

/// Exit status of a command refused for its input (nothing was done).
pub const EXIT_BAD_INPUT: u8 = 2;

/// The longest error line printed; longer ones lose their middle.
pub const MAX_LINE: usize = 1000;

/// An error in the command line, carrying its message.
#[derive(Debug)]
pub struct BadInput(pub String);

impl fmt::Display for BadInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadInput {}

/// Marks an error as bad input, keeping its whole message (contexts included).
pub fn bad(e: anyhow::Error) -> anyhow::Error {
    if is_bad(&e) {
        return e;
    }
    anyhow::Error::new(BadInput(format!("{e:#}")))
}

/// Bad input with this message.
pub fn bad_msg(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(BadInput(msg.into()))
}

pub fn is_bad(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.is::<BadInput>())
}

/// `text` on one line (its lines joined with "; ") of at most [`MAX_LINE`] characters: an
/// overlong one keeps its start and end around a note of how much was cut.
pub fn one_line(text: &str) -> String {
    let joined = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    let n = joined.chars().count();
    if n <= MAX_LINE {
        return joined;
    }
    let (head, tail) = (MAX_LINE * 2 / 3, MAX_LINE / 4);
    let start: String = joined.chars().take(head).collect();
    let end: String = joined.chars().skip(n - tail).collect();
    format!("{start}[... {} characters cut ...]{end}", n - head - tail)
}

/// A seconds option that must be positive and at most `max` (a Duration cannot hold every f64).
pub fn positive_secs(what: &str, v: f64, max: f64) -> anyhow::Result<std::time::Duration> {
    if !(v > 0.0 && v <= max) {
        return Err(bad_msg(format!(
            "{what} must be in (0, {max}] seconds, got {v:?}"
        )));
    }
    Ok(std::time::Duration::from_secs_f64(v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn bad_input_survives_contexts() {
        let e = Err::<(), _>(bad_msg("unknown feature X"))
            .context("arm \"eevdf:X\"")
            .unwrap_err();
        assert!(is_bad(&e));
        assert!(!is_bad(&anyhow::anyhow!("cannot open /sys/fs/bpf")));
        let wrapped = bad(anyhow::anyhow!("inner").context("outer"));
        assert!(is_bad(&wrapped));
        assert_eq!(wrapped.to_string(), "outer: inner");
    }

    #[test]
    fn errors_print_on_one_bounded_line() {
        assert_eq!(one_line("a\n\nb  \nc"), "a; b; c");
        let huge = format!("unknown feature {}; valid names: A B", "X".repeat(200_000));
        let line = one_line(&huge);
        assert!(line.chars().count() < MAX_LINE + 60);
        assert!(line.starts_with("unknown feature XXX"));
        assert!(line.ends_with("valid names: A B"));
        assert!(line.contains("characters cut"));
    }

    #[test]
    fn seconds_options_are_bounded() {
        assert!(positive_secs("x", 1.5, 3600.0).is_ok());
        for v in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e300] {
            let e = positive_secs("the interval", v, 3600.0).unwrap_err();
            assert!(is_bad(&e), "{v}");
        }
    }
}
