//! The examples shown at the end of every command's `--help`, kept in one place and
//! attached to the command tree at start-up.

use clap::Command;

/// (command path, examples) for every user-facing command.
const EXAMPLES: &[(&[&str], &str)] = &[
    (&[], "linerate demo\n  linerate tap --run 'ping -c 3 10.77.0.2'\n  linerate bench udp --duration 1s --json | jq .\n  linerate completions bash > /etc/bash_completion.d/linerate\n  RUST_LOG=debug linerate stats"),
    (&["demo"], "linerate demo\n  linerate demo --json | jq '.tables[0].rows[]'"),
    (&["tap"], "linerate tap                                   # until Ctrl-C; try: ip netns exec NS ping 10.77.0.2\n  linerate tap --duration 30s --pcap host.pcapng\n  linerate tap --json --run 'ping -c 3 10.77.0.2'   # ping's output goes to stderr\n  linerate tap --cleanup                         # remove namespaces of killed runs"),
    (&["host"], "ip netns exec NS linerate host --link af_xdp:veth0 --ip 10.0.0.2/24   # until Ctrl-C; try: ping 10.0.0.2, iperf3 -c 10.0.0.2\n  ip netns exec NS linerate host --link af_xdp:veth0 --ip 10.0.0.2/24 --queues 2 --duration 60s --json\n  linerate host --link af_packet:eth1 --ip 192.168.7.2/24 --gateway 192.168.7.1"),
    (&["ping"], "linerate ping --via mem -c 5 -i 100ms\n  linerate ping -6 -c 3 -s 3000\n  linerate ping -c 3 --json | jq '.tables[0].summary.rtt_median'"),
    (&["stats"], "linerate stats\n  linerate stats tap-lr-tap-4242-0 --all\n  linerate stats --json | jq '.tables[0].rows[] | select(.counter==\"rx_frames\")'"),
    (&["iperf"], "linerate iperf -s --shm demo                 # server: creates the link\n  linerate iperf -c 10.0.0.1 --shm demo -t 5s -P 4\n  linerate iperf -c 10.0.0.1 --shm demo -t 2s --json | jq '.tables[0].rows[0].goodput'\n  ip netns exec a linerate iperf -s --link af_xdp:veth0 --ip 10.9.0.1/24   # over a veth, AF_XDP\n  ip netns exec b linerate iperf -c 10.9.0.1 --link af_xdp:veth1 --ip 10.9.0.2/24"),
    (&["firewall"], "linerate firewall --blacklist data/firewall/drop-prefixes.txt --input in.pcap --output out.pcap\n  linerate firewall --blacklist data/firewall/drop-prefixes.txt --input in.pcap --output - --json > out.pcap"),
    (&["ids"], "linerate ids --rules data/ids/snort3-community.rules --make-trace t.pcap\n  linerate ids --rules data/ids/snort3-community.rules --input t.pcap --output fwd.pcap --alerts alerts.log\n  linerate ids check data/ids/snort3-community.rules --json"),
    (&["ids", "check"], "linerate ids check data/ids/snort3-community.rules\n  linerate ids check rules.rules --strict --json | jq .tables[0].summary"),
    (&["middlebox"], "linerate middlebox stats\n  linerate middlebox stats fw1 --watch 10"),
    (&["middlebox", "stats"], "linerate middlebox stats\n  linerate middlebox stats fw1 --watch 10 --json"),
    (&["spn"], "linerate spn generate --vars 10 -o m.json\n  linerate spn compile m.json\n  linerate spn bench --duration 1s --json"),
    (&["spn", "generate"], "linerate spn generate --vars 10 -o m.json\n  linerate spn generate --vars 20 --seed 7 -o m.json --samples 1000 --samples-out x.csv"),
    (&["spn", "compile"], "linerate spn compile m.json\n  linerate spn compile m.json --json"),
    (&["spn", "eval"], "linerate spn eval m.json x.csv\n  head -3 x.csv | linerate spn eval m.json\n  linerate spn eval m.json x.csv --json | jq .values"),
    (&["spn", "serve"], "linerate spn serve --shm spn1 --transport udp --limit 10m   # the other side creates the link\n  linerate spn serve --shm spn1 --transport tcp --workers 2\n  ip netns exec a linerate spn serve --link af_xdp:veth0 --ip 10.9.0.2/24 --model m.json   # on an interface\n  ip netns exec a linerate spn serve --link af_xdp:veth0 --ip 10.9.0.2/24 --ip6 fd09::2/64 --model m.json --transport udp,tcp   # and over IPv6"),
    (&["spn", "query"], "linerate spn query --server 10.77.0.2:5005 --input x.csv\n  linerate spn query --server 10.77.0.2:5005 --tcp --input x.npy --json | jq '.values'\n  linerate spn query --server [fd77::2]:5005 --input x.csv   # over IPv6"),
    (&["iperf3"], "linerate iperf3 -s --one-off --run 'iperf3 -c 10.77.0.2 -t 2 -J'   # stock iperf3 against linerate\n  linerate iperf3 -c 10.77.0.1 -t 2 -u -b 100M --json --run 'iperf3 -s -1'   # linerate against stock iperf3\n  linerate iperf3 -s --metrics-port 9464   # until Ctrl-C; Prometheus scrapes http://127.0.0.1:9464/metrics"),
    (&["spn", "bench"], "linerate spn bench --duration 1s\n  linerate spn bench --transports udp --duration 500ms --json | jq '.tables[0].summary'"),
    (&["rdma"], "linerate rdma bench\n  linerate rdma bench --reps 50 --mib 16 --json\n  linerate rdma serve --tap --region 64MiB --run 'linerate rdma write --af-packet lrtap0 --ip 10.77.0.3/24 --to 10.77.0.2 --key 0x10001 --size 64MiB'"),
    (&["rdma", "serve"], "linerate rdma serve --af-packet veth1 --ip 10.66.0.2/24 --region 64MiB --until-notified 64MiB --json\n  linerate rdma serve --tap --region 1MiB --set transport=eth --set segment_size=128K\n  linerate rdma serve --tap --region 1MiB --metrics-port 9464"),
    (&["rdma", "write"], "linerate rdma write --af-packet veth0 --ip 10.66.0.1/24 --to 10.66.0.2 --key 0x10001 --size 64MiB\n  linerate rdma write --af-packet veth0 --ip 10.66.0.1/24 --to 10.66.0.2 --key 0x10001 --file data.bin --region 64MiB --until-notified 64MiB\n  linerate rdma write --link af_xdp:veth0 --ip 10.66.0.1/24 --ip6 fd66::1/64 --to fd66::2 --key 0x10001 --size 64MiB   # over IPv6"),
    (&["rdma", "bench"], "linerate rdma bench\n  linerate rdma bench --reps 50 --mib 16 --json | jq '.tables[1].rows'"),
    (&["collective"], "linerate collective launch -n 4 ./my-rank-program --flag"),
    (&["collective", "launch"], "linerate collective launch -n 4 ./my-rank-program --flag\n  linerate collective launch -n 2 sh -c 'echo rank $LINERATE_RANK of $LINERATE_WORLD_SIZE'\n  linerate collective launch -n 3 --link 'af_xdp:veth{rank}' --ip 10.9.0.1/24 --netns 'ns{rank}' python3 prog.py"),
    (&["collective", "cleanup"], "linerate collective cleanup                  # /dev/shm files of killed jobs\n  linerate collective cleanup --fabric ompi-1234"),
    (&["kmeans"], "linerate kmeans --ranks 2\n  linerate kmeans --ranks 4 --data covtype.npy -k 7 --iters 20\n  linerate kmeans --ranks 2 --json --centres-out centres.npy\n  linerate kmeans --link af_xdp:veth0 --ip 10.9.0.2/24 --root 10.9.0.1 --rank 1 --world-size 3\n  linerate collective launch -n 3 --link 'af_xdp:veth{rank}' --ip 10.9.0.1/24 --netns 'ns{rank}' linerate kmeans"),
    (&["reproduce"], "linerate reproduce all --quick --out /tmp/repro   # every paper, small sizes, a few minutes\n  linerate reproduce 002 --out docs/reproduce\n  linerate reproduce 001 --quick --out r && grep -A8 'Fig. 7' r/report.md"),
    (&["bench"], "linerate bench link --duration 500ms\n  linerate bench tcp --csv tcp.csv --plot tcp.png\n  linerate bench udp --json | jq '.tables[0].rows[] | {metric, linerate, linux, unit}'"),
    (&["bench", "link"], "linerate bench link --duration 500ms --sizes 64,1514 --kinds mem,shm\n  linerate bench link --json | jq '.tables[1].rows'"),
    (&["bench", "udp"], "linerate bench udp --duration 1s\n  linerate bench udp --json | jq '.tables[0].rows[] | {metric, linerate, unit}'\n  linerate bench udp --link af_xdp   # over a veth on AF_XDP, beside Linux\n  linerate bench udp --ipv6         # linerate over IPv6; alternate with a plain run for the ratio"),
    (&["bench", "tcp"], "linerate bench tcp --duration 1s --repeat 1\n  linerate bench tcp --impairment-grid --grid-rows '1% loss' --grid-limit 60s --json\n  linerate bench tcp --link af_xdp --many 1000   # linerate over a veth on AF_XDP, beside Linux"),
    (&["bench", "middlebox"], "linerate bench middlebox --duration 200ms --sizes 64 --units 1\n  linerate bench middlebox --skip ids,swap --json"),
    (&["bench", "collective"], "linerate bench collective --ranks 2\n  linerate bench collective --ranks 2,4 --json\n  linerate bench collective --veth   # 2 ranks in two namespaces over a veth: linerate on AF_XDP vs OpenMPI TCP"),
    (&["man"], "linerate man /usr/local/share/man/man1 && man linerate-ping\n  linerate man out && man -l out/linerate-bench-link.1"),
    (&["completions"], "linerate completions bash > ~/.local/share/bash-completion/completions/linerate\n  linerate completions zsh > ~/.zfunc/_linerate\n  linerate completions fish > ~/.config/fish/completions/linerate.fish"),
];

/// Text after the examples: the conventions every command shares.
const CONVENTIONS: &str = "Durations take a unit: 5s, 500ms, 2m (a bare number is seconds). --json prints one \
JSON document on stdout: {\"tables\":[{\"title\",\"units\",\"rows\",\"summary\"}]}, numbers in base units \
(s, bit/s, frame/s, B, counts). -v/-vv/-vvv or RUST_LOG log to stderr.";

/// Attach the examples to `cmd` and its subcommands.
pub fn attach(cmd: Command) -> Command {
    attach_at(cmd, &mut Vec::new())
}

fn attach_at(mut cmd: Command, path: &mut Vec<String>) -> Command {
    if let Some((_, text)) = EXAMPLES.iter().find(|(p, _)| p.iter().eq(path.iter())) {
        let help = if path.is_empty() {
            format!("Examples:\n  {text}\n\n{CONVENTIONS}")
        } else {
            format!("Examples:\n  {text}")
        };
        cmd = cmd.after_help(help);
    }
    let names: Vec<String> = cmd.get_subcommands().map(|s| s.get_name().to_string()).collect();
    for name in names {
        path.push(name.clone());
        let p = path.clone();
        cmd = cmd.mut_subcommand(&name, |s| attach_at(s, &mut p.clone()));
        path.pop();
    }
    cmd
}

/// The paths of the commands a user sees that have no examples (for the test below).
#[cfg(test)]
fn missing(cmd: &Command, path: &mut Vec<String>, out: &mut Vec<String>) {
    if cmd.is_hide_set() || cmd.get_name() == "help" {
        return;
    }
    if cmd.get_after_help().is_none() {
        out.push(path.join(" "));
    }
    for s in cmd.get_subcommands() {
        path.push(s.get_name().to_string());
        missing(s, path, out);
        path.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn every_visible_command_has_examples() {
        let cmd = attach(crate::Cli::command());
        let mut out = Vec::new();
        missing(&cmd, &mut Vec::new(), &mut out);
        assert!(out.is_empty(), "commands without examples: {out:?}");
        let paths: Vec<String> = EXAMPLES.iter().map(|(p, _)| p.join(" ")).collect();
        for p in &paths {
            let mut c = &cmd;
            for part in p.split_whitespace() {
                c = c
                    .find_subcommand(part)
                    .unwrap_or_else(|| panic!("examples for a command that does not exist: {p}"));
            }
        }
    }
}
