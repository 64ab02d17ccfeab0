//! Rule variables (`$HOME_NET`, `$HTTP_PORTS`, ...) with Snort 3's default values.
//!
//! Values are kept as text and expanded when a rule header is parsed, so a variable may refer
//! to other variables (`$HTTP_SERVERS` defaults to `$HOME_NET`).

use std::collections::BTreeMap;

/// Snort 3's default `$HTTP_PORTS` (snort_defaults.lua).
const HTTP_PORTS: &str = "80,81,311,383,591,593,901,1220,1414,1741,1830,2301,2381,2809,3037,3128,3702,4343,\
4848,5250,6988,7000,7001,7144,7145,7510,7777,7779,8000,8008,8014,8028,8080,8085,8088,8090,8118,8123,8180,\
8181,8243,8280,8300,8800,8888,8899,9000,9060,9080,9090,9091,9443,9999,11371,34443,34444,41080,50002,55555";

/// Address and port variables used by rule headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vars {
    /// Address variables (name without `$` -> value such as `any`, `10.0.0.0/8` or `[a,b,!c]`).
    pub nets: BTreeMap<String, String>,
    /// Port variables (name without `$` -> value such as `80`, `1024:` or `[80,8080]`).
    pub ports: BTreeMap<String, String>,
}

impl Default for Vars {
    /// Snort 3's defaults: `HOME_NET` and `EXTERNAL_NET` are `any`, every `*_SERVERS` is
    /// `$HOME_NET`, and the port lists of snort_defaults.lua.
    fn default() -> Self {
        let mut nets = BTreeMap::new();
        nets.insert("HOME_NET".into(), "any".into());
        nets.insert("EXTERNAL_NET".into(), "any".into());
        for s in ["DNS", "SMTP", "HTTP", "SQL", "TELNET", "SSH", "FTP", "SIP"] {
            nets.insert(format!("{s}_SERVERS"), "$HOME_NET".into());
        }
        nets.insert(
            "AIM_SERVERS".into(),
            "[64.12.24.0/23,64.12.28.0/23,64.12.161.0/24,64.12.163.0/24,64.12.200.0/24,205.188.3.0/24,\
             205.188.5.0/24,205.188.7.0/24,205.188.9.0/24,205.188.153.0/24,205.188.179.0/24,205.188.248.0/24]"
                .replace(' ', ""),
        );
        let mut ports = BTreeMap::new();
        ports.insert("HTTP_PORTS".into(), format!("[{HTTP_PORTS}]"));
        ports.insert("SHELLCODE_PORTS".into(), "!80".into());
        ports.insert("ORACLE_PORTS".into(), "1024:".into());
        ports.insert("SSH_PORTS".into(), "22".into());
        ports.insert("FTP_PORTS".into(), "[21,2100,3535]".into());
        ports.insert("SIP_PORTS".into(), "[5060,5061,5600]".into());
        ports.insert("MAIL_PORTS".into(), "[110,143]".into());
        ports.insert("FILE_DATA_PORTS".into(), "[$HTTP_PORTS,$MAIL_PORTS]".into());
        ports.insert("GTP_PORTS".into(), "[2123,2152,3386]".into());
        ports.insert("RPC_PORTS".into(), "[111,32770,32771,32772,32773,32774,32775,32776,32777,32778,32779]".into());
        Vars { nets, ports }
    }
}

impl Vars {
    /// Sets (or replaces) an address variable; `name` is given without `$`.
    pub fn set_net(&mut self, name: &str, value: &str) -> &mut Self {
        self.nets.insert(name.trim_start_matches('$').to_string(), value.to_string());
        self
    }

    /// Sets (or replaces) a port variable; `name` is given without `$`.
    pub fn set_port(&mut self, name: &str, value: &str) -> &mut Self {
        self.ports.insert(name.trim_start_matches('$').to_string(), value.to_string());
        self
    }

    /// The value of an address variable.
    pub fn net(&self, name: &str) -> Option<&str> {
        self.nets.get(name).map(String::as_str)
    }

    /// The value of a port variable.
    pub fn port(&self, name: &str) -> Option<&str> {
        self.ports.get(name).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_cover_the_community_variables() {
        let v = Vars::default();
        for n in [
            "HOME_NET",
            "EXTERNAL_NET",
            "HTTP_SERVERS",
            "SMTP_SERVERS",
            "SQL_SERVERS",
            "TELNET_SERVERS",
            "SIP_SERVERS",
            "DNS_SERVERS",
        ] {
            assert!(v.net(n).is_some(), "{n}");
        }
        for n in ["HTTP_PORTS", "ORACLE_PORTS", "FILE_DATA_PORTS", "SIP_PORTS", "SSH_PORTS", "FTP_PORTS"] {
            assert!(v.port(n).is_some(), "{n}");
        }
        let mut v2 = v.clone();
        v2.set_net("$HOME_NET", "10.0.0.0/8");
        assert_eq!(v2.net("HOME_NET"), Some("10.0.0.0/8"));
    }
}
