//! The syntax of workload specs on the command line: a `-w` value holds one or more specs
//! separated by commas (`pingpong,messaging:groups=4`); a spec is `NAME[:item...]`, or a
//! composite of such parts joined by `+`, which run at once (`schlat:cgroup=lat+pipe-stream:
//! cgroup=batch`); a value may be single-quoted to hold `:`, `,` or `+` (`cmd:'perf bench sched
//! pipe':metric='([0-9.]+) usecs'`); and one parameter of a spec may be a comma-separated list,
//! a sweep (`messaging:groups=1,2,4,8,16`), which stands for one workload per value.
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

/// The workload name a spec or a part starts with (before its first `:` or `+`).
fn name_of(p: &str) -> &str {
    p.split([':', '+']).next().unwrap_or("").trim()
}

/// The parts of a composite spec (`A+B`): split at each `+` outside quotes. A piece after a
/// `+` that does not start with a workload name continues a `cmd` part (its command or regex
/// may hold a `+`), and is refused after any other part. One part: the spec itself.
pub fn split_parts(spec: &str, names: &[&str]) -> Result<Vec<String>> {
    const SYNTAX: &str = "a composite is NAME[:key=value...]+NAME[:key=value...]";
    let mut parts: Vec<String> = Vec::new();
    for piece in split_outside_quotes(spec, '+')? {
        let starts = names.contains(&name_of(&piece));
        match parts.last_mut() {
            Some(last) if !starts => {
                if name_of(last) != "cmd" {
                    if piece.trim().is_empty() {
                        bail!("{spec:?}: nothing follows a '+' ({SYNTAX})");
                    }
                    bail!("{spec:?}: {piece:?} after '+' is not a workload ({SYNTAX})");
                }
                last.push('+');
                last.push_str(&piece);
            }
            _ => parts.push(piece),
        }
    }
    if parts.len() > 1 && parts[0].trim().is_empty() {
        bail!("{spec:?}: nothing comes before the '+' ({SYNTAX})");
    }
    if parts.len() == 1 {
        return Ok(parts);
    }
    Ok(parts.into_iter().map(|p| p.trim().to_string()).collect())
}

/// The workload specs of the `-w` values: each value is split at commas outside quotes, and a
/// piece that does not start with a workload name continues the previous spec (the rest of a
/// sweep's list: `messaging:groups=1,2,4`).
pub fn split_specs(values: &[String], names: &[&str]) -> Result<Vec<String>> {
    let starts_spec = |p: &str| names.contains(&name_of(p));
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
/// place in the sweep. A spec (a composite: all its parts together) may sweep one parameter;
/// `fixed` names the workloads whose values are never lists (a `cmd` workload's regex may hold
/// commas); `names` are the workload names (to find a composite's parts).
pub fn expand(
    spec: &str,
    fixed: &[&str],
    names: &[&str],
) -> Result<Vec<(String, Option<SweepPoint>)>> {
    let parts: Vec<Vec<String>> = split_parts(spec, names)?
        .iter()
        .map(|p| split_outside_quotes(p, ':'))
        .collect::<Result<_>>()?;
    let mut swept: Option<(usize, usize, String, Vec<String>)> = None;
    for (pi, items) in parts.iter().enumerate() {
        if fixed.contains(&items[0].trim()) {
            continue;
        }
        for (i, item) in items.iter().enumerate().skip(1) {
            let Some((k, v)) = item.split_once('=') else {
                continue;
            };
            let values = split_outside_quotes(v, ',')?;
            if values.len() < 2 {
                continue;
            }
            if let Some((_, _, other, _)) = &swept {
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
            swept = Some((pi, i, k.to_string(), values));
        }
    }
    let Some((pi, i, key, values)) = swept else {
        return Ok(vec![(spec.to_string(), None)]);
    };
    Ok(values
        .iter()
        .enumerate()
        .map(|(index, v)| {
            let mut point = parts.clone();
            point[pi][i] = format!("{key}={v}");
            let joined: Vec<String> = point.iter().map(|items| items.join(":")).collect();
            (
                joined.join("+"),
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

    const NAMES: &[&str] = &["pingpong", "messaging", "cmd", "schlat"];

    fn expand(spec: &str, fixed: &[&str]) -> Result<Vec<(String, Option<SweepPoint>)>> {
        super::expand(spec, fixed, NAMES)
    }

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
        // A composite is one spec; a sweep's list may end before a '+'.
        assert_eq!(
            specs(&["pingpong,messaging+schlat:workers=2,4+pingpong,pingpong:pairs=2"]),
            [
                "pingpong",
                "messaging+schlat:workers=2,4+pingpong",
                "pingpong:pairs=2"
            ]
        );
    }

    #[test]
    fn a_composite_splits_at_plus_signs_before_workload_names() {
        let parts = |s: &str| split_parts(s, NAMES);
        assert_eq!(
            parts("schlat:cgroup=lat + messaging:groups=1").unwrap(),
            ["schlat:cgroup=lat", "messaging:groups=1"]
        );
        assert_eq!(parts("pingpong").unwrap(), ["pingpong"]);
        // A cmd part keeps its '+' (unquoted in a regex or a command); quoted ones too.
        assert_eq!(
            parts("cmd:echo 1+1:metric=[0-9]+:better=higher+pingpong").unwrap(),
            ["cmd:echo 1+1:metric=[0-9]+:better=higher", "pingpong"]
        );
        assert_eq!(
            parts("pingpong+cmd:'a+b':metric='x+':better=lower").unwrap(),
            ["pingpong", "cmd:'a+b':metric='x+':better=lower"]
        );
        for (spec, want) in [
            ("pingpong+", "nothing follows a '+'"),
            ("+pingpong", "nothing comes before the '+'"),
            ("pingpong++messaging", "nothing follows a '+'"),
            ("pingpong+nosuch", "\"nosuch\" after '+' is not a workload"),
            ("pingpong:pairs=2+2", "\"2\" after '+' is not a workload"),
            ("pingpong+cmd:'x", "unbalanced single quote"),
        ] {
            let e = parts(spec).unwrap_err().to_string();
            assert!(e.contains(want), "{spec}: {e}");
        }
    }

    #[test]
    fn a_composite_sweeps_one_parameter_of_one_part() {
        let pts = expand("schlat:workers=2,4:cgroup=lat+pingpong:cgroup=b", &["cmd"]).unwrap();
        let specs: Vec<&str> = pts.iter().map(|p| p.0.as_str()).collect();
        assert_eq!(
            specs,
            [
                "schlat:workers=2:cgroup=lat+pingpong:cgroup=b",
                "schlat:workers=4:cgroup=lat+pingpong:cgroup=b"
            ]
        );
        assert_eq!(pts[1].1.as_ref().unwrap().key, "workers");
        let e = expand("schlat:workers=2,4+pingpong:pairs=1,2", &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("only one parameter"), "{e}");
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
