//! `flow` and `flowbits`.

use super::*;

pub(super) fn parse_flow(v: &str, rule: &mut Rule) -> Result<(), Reason> {
    for p in v.split(',').map(str::trim) {
        match p {
            "to_server" | "from_client" => rule.flow.to_server = Some(true),
            "to_client" | "from_server" => rule.flow.to_server = Some(false),
            "established" => rule.flow.established = true,
            "not_established" => rule.flow.not_established = true,
            "stateless" => rule.flow.stateless = true,
            "no_stream" | "only_stream" | "no_frag" | "only_frag" => {
                rule.approximations.push(format!("flow:{p} (not checked: the caller decides what it passes)"));
            }
            other => return Err(Reason::Unknown { family: "flow", what: "argument", word: shorten(other) }),
        }
    }
    Ok(())
}

pub(super) fn parse_flowbits(v: &str) -> Result<FlowbitsOp, Reason> {
    let mut it = v.splitn(2, ',');
    let cmd = it.next().unwrap_or("").trim();
    let arg = it.next().map(str::trim);
    let bits = |need: bool| -> Result<(Vec<String>, bool), Reason> {
        let a = match arg {
            Some(a) if !a.is_empty() => a,
            _ if need => return Err(Reason::bad(format!("flowbits:{cmd} needs a bit name"))),
            _ => return Ok((Vec::new(), false)),
        };
        // Snort 3 allows a group name after the bits (`set,a,group`): the group is ignored.
        let a = a.split(',').next().unwrap_or("").trim();
        let any = a.contains('|');
        if any && a.contains('&') {
            return Err(Reason::bad_in("flowbits", "cannot mix '|' and '&'"));
        }
        let names: Vec<String> = a.split(['|', '&']).map(|s| s.trim().to_string()).collect();
        if names.iter().any(|n| n.is_empty() || !n.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))) {
            return Err(Reason::bad_in("flowbits", format!("bad bit name in '{}'", shorten(a))));
        }
        Ok((names, any))
    };
    Ok(match cmd {
        "set" => FlowbitsOp::Set(bits(true)?.0),
        "unset" => FlowbitsOp::Unset(bits(true)?.0),
        "toggle" => FlowbitsOp::Toggle(bits(true)?.0),
        "isset" => {
            let (b, any) = bits(true)?;
            FlowbitsOp::IsSet { bits: b, any }
        }
        "isnotset" => {
            let (b, any) = bits(true)?;
            FlowbitsOp::IsNotSet { bits: b, any }
        }
        "noalert" => FlowbitsOp::NoAlert,
        other => return Err(Reason::Unknown { family: "flowbits", what: "command", word: shorten(other) }),
    })
}
