//! The syntax of workload specs on the command line: a `-w` value holds one or more specs
//! separated by commas (`pingpong,messaging:groups=4`); a spec is `NAME[:item...]`; a value may
//! be single-quoted to hold `:` or `,` (`cmd:'perf bench sched pipe':metric='([0-9.]+) usecs'`);
//! and one parameter of a spec may be a comma-separated list, a sweep
//! (`messaging:groups=1,2,4,8,16`), which stands for one workload per value.
//!
//! Only the syntax lives here; what the keys mean is each workload's business ([`super::parse`]).

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

/// Splits `s` at every `sep` outside single quotes; quotes are kept (see [`unquote`]).
pub fn split_outside_quotes(s: &str, sep: char) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for c in s.chars() {
        if c == '\'' {
            quoted = !quoted;
        }
        if c == sep && !quoted {
            out.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
    }
    if quoted {
        bail!("unbalanced single quote in {s:?}");
    }
    out.push(cur);
    Ok(out)
}

/// A value without its single quotes (`'a:b'` → `a:b`; `x='a,b'` → `x=a,b`).
pub fn unquote(s: &str) -> String {
    s.replace('\'', "")
}

/// The workload specs of the `-w` values: each value is split at commas outside quotes, and a
/// piece that does not start with a workload name continues the previous spec (the rest of a
/// sweep's list: `messaging:groups=1,2,4`).
pub fn split_specs(values: &[String], names: &[&str]) -> Result<Vec<String>> {
    let starts_spec = |p: &str| {
        let name = p.split(':').next().unwrap_or("");
        names.contains(&name)
    };
    let mut specs: Vec<String> = Vec::new();
    for v in values {
        let mut in_value = false;
        for piece in split_outside_quotes(v, ',')? {
            let p = piece.trim();
            if p.is_empty() {
                continue;
            }
            match specs.last_mut() {
                Some(last) if in_value && !starts_spec(p) => {
                    last.push(',');
                    last.push_str(p);
                }
                _ => specs.push(p.to_string()),
            }
            in_value = true;
        }
    }
    Ok(specs)
}

/// Where a workload of a sweep sits in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepPoint {
    /// The spec as given, with the list (`messaging:groups=1,2,4`).
    pub spec: String,
    pub key: String,
    /// This point's value, and its position in the list.
    pub value: String,
    pub index: usize,
}

/// One workload spec for each value of its sweep (the spec itself when it has none), with its
/// place in the sweep. A spec may sweep one parameter; `fixed` names the workloads whose values
/// are never lists (a `cmd` workload's regex may hold commas).
pub fn expand(spec: &str, fixed: &[&str]) -> Result<Vec<(String, Option<SweepPoint>)>> {
    let items = split_outside_quotes(spec, ':')?;
    let name = items[0].as_str();
    if fixed.contains(&name) {
        return Ok(vec![(spec.to_string(), None)]);
    }
    let mut swept: Option<(usize, String, Vec<String>)> = None;
    for (i, item) in items.iter().enumerate().skip(1) {
        let Some((k, v)) = item.split_once('=') else {
            continue;
        };
        let values = split_outside_quotes(v, ',')?;
        if values.len() < 2 {
            continue;
        }
        if let Some((_, other, _)) = &swept {
            bail!(
                "{spec:?}: only one parameter of a workload may be swept ({other} and {k} are lists)"
            );
        }
        if values.iter().any(|x| x.trim().is_empty()) {
            bail!("{spec:?}: the sweep of {k} has an empty value");
        }
        for (j, x) in values.iter().enumerate() {
            if values[..j].contains(x) {
                bail!("{spec:?}: the sweep of {k} lists {x} twice");
            }
        }
        swept = Some((i, k.to_string(), values));
    }
    let Some((i, key, values)) = swept else {
        return Ok(vec![(spec.to_string(), None)]);
    };
    Ok(values
        .iter()
        .enumerate()
        .map(|(index, v)| {
            let mut point = items.clone();
            point[i] = format!("{key}={v}");
            (
                point.join(":"),
                Some(SweepPoint {
                    spec: spec.to_string(),
                    key: key.clone(),
                    value: v.clone(),
                    index,
                }),
            )
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: &[&str] = &["pingpong", "messaging", "cmd"];

    fn specs(v: &[&str]) -> Vec<String> {
        split_specs(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>(), NAMES).unwrap()
    }

    #[test]
    fn commas_separate_specs_and_continue_sweeps() {
        assert_eq!(
            specs(&["pingpong,messaging:groups=1,2,4:loops=10"]),
            ["pingpong", "messaging:groups=1,2,4:loops=10"]
        );
        assert_eq!(
            specs(&["messaging:groups=1,2", "pingpong:pairs=1,2,4,messaging"]),
            ["messaging:groups=1,2", "pingpong:pairs=1,2,4", "messaging"]
        );
        // Quoted commas and colons stay inside their value.
        assert_eq!(
            specs(&["cmd:'a, b':metric='x: ([0-9]+), y':better=lower,pingpong"]),
            [
                "cmd:'a, b':metric='x: ([0-9]+), y':better=lower",
                "pingpong"
            ]
        );
        assert!(split_specs(&["cmd:'open".into()], NAMES).is_err());
    }

    #[test]
    fn a_sweep_becomes_one_spec_per_value() {
        let pts = expand("messaging:groups=1,2,4:loops=10", &["cmd"]).unwrap();
        let specs: Vec<&str> = pts.iter().map(|p| p.0.as_str()).collect();
        assert_eq!(
            specs,
            [
                "messaging:groups=1:loops=10",
                "messaging:groups=2:loops=10",
                "messaging:groups=4:loops=10"
            ]
        );
        let last = pts[2].1.as_ref().unwrap();
        assert_eq!(
            (last.key.as_str(), last.value.as_str(), last.index),
            ("groups", "4", 2)
        );
        assert_eq!(last.spec, "messaging:groups=1,2,4:loops=10");
        assert_eq!(
            expand("pingpong:pairs=2", &[]).unwrap(),
            [("pingpong:pairs=2".into(), None)]
        );
        // A cmd workload's values are never lists.
        let c = "cmd:'x':metric=a,b:better=lower";
        assert_eq!(expand(c, &["cmd"]).unwrap(), [(c.to_string(), None)]);
    }

    #[test]
    fn bad_sweeps_are_refused_with_the_reason() {
        let e = expand("messaging:groups=1,2:loops=1,2", &[])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("only one parameter") && e.contains("loops"),
            "{e}"
        );
        let e = expand("messaging:groups=1,,4", &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("empty value"), "{e}");
        let e = expand("messaging:groups=2,2", &[]).unwrap_err().to_string();
        assert!(e.contains("lists 2 twice"), "{e}");
    }
}
