//! A workload's `key=value` parameters, as written after its name on the command line
//! (`pingpong:pairs=2:pin=same-cpu`), and the `pin=` placement they may choose.
//!
//! This is only parsing and checking against the keys a workload accepts; which workload a
//! spec names and what its defaults are is decided by [`super::parse`] and each workload's
//! constructor.

use super::allowed_cpus;
use anyhow::{Context, Result, bail};
use std::collections::BTreeMap;

/// A parameter a workload takes: its key and what it means. Its default is whatever the
/// workload's constructor picks for a spec without it, read back through [`super::Workload::params`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub name: &'static str,
    pub help: &'static str,
}

pub const fn key(name: &'static str, help: &'static str) -> Key {
    Key { name, help }
}

/// Key/value parameters of a workload spec.
#[derive(Debug, Default)]
pub struct Params {
    kv: BTreeMap<String, String>,
}

impl Params {
    /// Parses `key=value[:key=value...]`; a value may be single-quoted to hold `:` or `,`.
    pub fn parse(spec: &str, allowed: &[Key]) -> Result<Params> {
        let mut kv = BTreeMap::new();
        for item in super::spec::split_outside_quotes(spec, ':')?
            .iter()
            .filter(|s| !s.is_empty())
        {
            let Some((k, v)) = item.split_once('=') else {
                bail!("expected KEY=VALUE in the workload parameters, got {item:?}");
            };
            let v = &super::spec::unquote(v);
            if !allowed.iter().any(|a| a.name == k) {
                bail!(
                    "unknown parameter {k:?}; this workload takes: {}",
                    allowed.iter().map(|a| a.name).collect::<Vec<_>>().join(" ")
                );
            }
            kv.insert(k.to_string(), v.to_string());
        }
        Ok(Params { kv })
    }

    pub fn u64(&self, key: &str, default: u64) -> Result<u64> {
        match self.kv.get(key) {
            None => Ok(default),
            Some(v) => v
                .replace('_', "")
                .parse()
                .with_context(|| format!("{key}={v:?} is not a non-negative integer")),
        }
    }

    pub fn str<'a>(&'a self, key: &str, default: &'a str) -> &'a str {
        self.kv.get(key).map(|s| s.as_str()).unwrap_or(default)
    }

    pub fn opt(&self, key: &str) -> Option<&str> {
        self.kv.get(key).map(|s| s.as_str())
    }

    pub fn flag(&self, key: &str, default: bool) -> Result<bool> {
        match self.kv.get(key).map(|s| s.as_str()) {
            None => Ok(default),
            Some("1" | "yes" | "true" | "on") => Ok(true),
            Some("0" | "no" | "false" | "off") => Ok(false),
            Some(v) => bail!("{key}={v:?}: expected 1 or 0"),
        }
    }
}

/// Task placement of the pipe workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pin {
    /// Wherever the scheduler puts them.
    None,
    /// Both ends of a pair on one CPU.
    SameCpu,
    /// The two ends of a pair on two different CPUs.
    CrossCpu,
}

impl Pin {
    pub fn parse(s: &str) -> Result<Pin> {
        Ok(match s {
            "none" => Pin::None,
            "same-cpu" => Pin::SameCpu,
            "cross-cpu" => Pin::CrossCpu,
            _ => bail!("pin={s:?}: expected none, same-cpu or cross-cpu"),
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Pin::None => "none",
            Pin::SameCpu => "same-cpu",
            Pin::CrossCpu => "cross-cpu",
        }
    }

    /// The CPUs for the two ends of pair `i` (None = unpinned).
    pub fn cpus(self, i: usize) -> (Option<usize>, Option<usize>) {
        let cpus = allowed_cpus();
        let n = cpus.len();
        match self {
            Pin::None => (None, None),
            Pin::SameCpu => (Some(cpus[i % n]), Some(cpus[i % n])),
            Pin::CrossCpu => (Some(cpus[(2 * i) % n]), Some(cpus[(2 * i + 1) % n])),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_are_checked_against_the_workloads_keys() {
        let keys = [key("pairs", ""), key("pin", "")];
        let p = Params::parse("pairs=2:pin=same-cpu", &keys).unwrap();
        assert_eq!(p.u64("pairs", 1).unwrap(), 2);
        assert_eq!(p.str("pin", "none"), "same-cpu");
        assert_eq!(p.u64("other", 7).unwrap(), 7);
        let e = Params::parse("bogus=1", &keys[..1])
            .unwrap_err()
            .to_string();
        assert!(e.contains("bogus") && e.contains("pairs"), "{e}");
        assert!(Params::parse("pairs", &keys).is_err());
        let q = Params::parse("pin='a:b,c':pairs=3", &keys).unwrap();
        assert_eq!((q.str("pin", ""), q.u64("pairs", 0).unwrap()), ("a:b,c", 3));
    }
}
