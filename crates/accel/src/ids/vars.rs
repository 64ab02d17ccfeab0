//! Rule variables (`$HOME_NET`, `$HTTP_PORTS`, ...) with Snort 3's default values.
//!
//! Values are kept as text and expanded when a rule header is parsed, so a variable may refer
//! to other variables (`$HTTP_SERVERS` defaults to `$HOME_NET`).

use std::collections::BTreeMap;
use std::path::Path;

use super::parse::define_var;
use crate::AccelError;

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

    /// Set `name` (with or without `$`) to `value`, checked: a port variable if the name
    /// mentions PORT (Snort's convention), else an address variable. Values may use other
    /// variables (`!$HOME_NET`). For a command line's `--var NAME=VALUE`.
    pub fn define(&mut self, name: &str, value: &str) -> Result<(), String> {
        define_var(self, name.trim(), value.trim(), true).map_err(|e| e.to_string())
    }

    /// Read variable definitions from `path`, one per line: Snort's `ipvar NAME VALUE`,
    /// `var NAME VALUE`, `portvar NAME VALUE`, or `NAME=VALUE`, or Suricata's `NAME: "VALUE"`
    /// (as under `address-groups:` and `port-groups:` in suricata.yaml, whose section lines
    /// are accepted); `#` starts a comment. Errors name the file and line.
    pub fn read_file(&mut self, path: &Path) -> Result<(), AccelError> {
        let text = AccelError::read_to_string(path)?;
        let source = path.display().to_string();
        for (i, raw) in text.lines().enumerate() {
            self.read_line(raw).map_err(|e| AccelError::parse(&source, i + 1, e))?;
        }
        Ok(())
    }

    fn read_line(&mut self, raw: &str) -> Result<(), String> {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() || ["vars:", "address-groups:", "port-groups:"].contains(&line) {
            return Ok(());
        }
        let mut words = line.splitn(2, char::is_whitespace);
        let first = words.next().unwrap_or("");
        let rest = words.next().unwrap_or("").trim();
        if let Some(net) = match first {
            "ipvar" | "var" => Some(true),
            "portvar" => Some(false),
            _ => None,
        } {
            let (name, value) = rest.split_once(char::is_whitespace).ok_or("a variable needs a name and a value")?;
            return define_var(self, name, value.trim(), net).map_err(|e| e.to_string());
        }
        let (name, value) = line
            .split_once('=')
            .or_else(|| line.split_once(':'))
            .ok_or("expected 'ipvar|portvar|var NAME VALUE', 'NAME=VALUE' or 'NAME: VALUE'")?;
        let value = value.trim();
        let value = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')).unwrap_or(value);
        if value.is_empty() {
            return Err(format!("variable {} has no value", name.trim()));
        }
        self.define(name, value)
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

    #[test]
    fn definitions_are_checked_and_files_name_their_lines() {
        let mut v = Vars::default();
        v.define("HOME_NET", "[10.0.0.0/8,192.168.0.0/16]").unwrap();
        v.define("$EXTERNAL_NET", "!$HOME_NET").unwrap();
        v.define("HTTP_PORTS", "[80,8080]").unwrap();
        assert_eq!(v.net("EXTERNAL_NET"), Some("!$HOME_NET"));
        assert_eq!(v.port("HTTP_PORTS"), Some("[80,8080]"));
        assert!(v.define("HOME_NET", "10.0.0.300/8").unwrap_err().contains("HOME_NET"));
        assert!(v.define("HTTP_PORTS", "eighty").is_err());
        assert!(v.define("A B", "any").is_err());
        let dir = std::env::temp_dir().join(format!("accel-vars-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("vars.conf");
        std::fs::write(
            &f,
            "# snort style\nipvar HOME_NET 172.16.0.0/12\nportvar SSH_PORTS [22,2222]\n\
             vars:\n  address-groups:\n    DNS_SERVERS: \"[172.16.0.53]\"\nSMTP_SERVERS=$HOME_NET\n",
        )
        .unwrap();
        let mut v = Vars::default();
        v.read_file(&f).unwrap();
        assert_eq!(v.net("HOME_NET"), Some("172.16.0.0/12"));
        assert_eq!(v.port("SSH_PORTS"), Some("[22,2222]"));
        assert_eq!(v.net("DNS_SERVERS"), Some("[172.16.0.53]"));
        assert_eq!(v.net("SMTP_SERVERS"), Some("$HOME_NET"));
        std::fs::write(&f, "ipvar HOME_NET 10.0.0.0/8\nportvar X_PORTS notaport\n").unwrap();
        let e = Vars::default().read_file(&f).unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}:2: X_PORTS:", f.display())), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
