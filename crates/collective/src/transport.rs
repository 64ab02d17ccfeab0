//! Which transport carries the messages between two ranks: the collective-level
//! shared-memory pipes ([`crate::pipe`]) when the ranks share a machine, linerate TCP over
//! their link otherwise.
//!
//! | `LINERATE_TRANSPORT` / `init(transport=)` | ranks on the shared-memory fabric | ranks on a link (`LINERATE_LINK`) |
//! | --- | --- | --- |
//! | `auto` (default) | pipes (a fabric is one machine by construction) | pipes to the ranks whose host name (exchanged in the set-up's hello) is ours, TCP over the link to the others ([`Transport::apply`]; TCP to all if the job has no name) |
//! | `shm` | pipes | pipes (the user says all ranks share this machine) |
//! | `tcp` | TCP over the fabric's rings | TCP over the link |
//!
//! The TCP connections are set up either way: they carry the mesh's set-up and tell a rank
//! that a peer is gone; with pipes, the operations' messages go through the pipes only.

use crate::CollectiveError;

/// The transport choice (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Transport {
    /// Pipes between ranks on one machine's fabric, TCP over a link.
    #[default]
    Auto,
    /// Pipes to every peer.
    Shm,
    /// TCP to every peer.
    Tcp,
}

impl Transport {
    /// Parses `auto`, `shm` or `tcp`.
    pub fn parse(s: &str) -> Result<Transport, CollectiveError> {
        match s.trim() {
            "auto" | "" => Ok(Transport::Auto),
            "shm" => Ok(Transport::Shm),
            "tcp" => Ok(Transport::Tcp),
            other => Err(CollectiveError::BadArgument(format!(
                "transport {other:?}: one of auto, shm, tcp (LINERATE_TRANSPORT or transport=)"
            ))),
        }
    }

    /// `LINERATE_TRANSPORT`, or [`Transport::Auto`] when unset.
    pub fn from_env() -> Result<Transport, CollectiveError> {
        std::env::var("LINERATE_TRANSPORT").map_or(Ok(Transport::Auto), |v| Transport::parse(&v))
    }

    /// [`crate::Config::shm`] for a rank of job `job` (the fabric's name, or the launcher's
    /// job name on a link), on the fabric (`on_fabric`) or on a link.
    pub fn shm_job(self, on_fabric: bool, job: Option<&str>) -> Result<Option<String>, CollectiveError> {
        match (self, on_fabric) {
            (Transport::Tcp, _) | (Transport::Auto, false) => Ok(None),
            (Transport::Auto, true) | (Transport::Shm, _) => match job {
                Some(j) => Ok(Some(j.to_string())),
                None => Err(CollectiveError::BadArgument(
                    "the shared-memory transport needs the job's name (LINERATE_FABRIC or the launcher's job id)"
                        .into(),
                )),
            },
        }
    }
}

impl Transport {
    /// Sets [`crate::Config::shm`] and [`crate::Config::host`] for a rank of job `job` on
    /// the fabric (`on_fabric`) or on a link, as the module's table says: `auto` on a link
    /// names this machine (its host name) so that only peers on it get pipes.
    pub fn apply(self, cfg: &mut crate::Config, on_fabric: bool, job: Option<&str>) -> Result<(), CollectiveError> {
        if self == Transport::Auto && !on_fabric {
            cfg.shm = job.map(str::to_string);
            cfg.host = job.and_then(|_| host_name());
            if cfg.host.is_none() {
                cfg.shm = None;
            }
            return Ok(());
        }
        cfg.shm = self.shm_job(on_fabric, job)?;
        cfg.host = None;
        Ok(())
    }
}

/// This machine's host name (`None` if the system gives none).
pub fn host_name() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most `buf.len()` bytes into our buffer.
    if unsafe { libc::gethostname(buf.as_mut_ptr() as *mut libc::c_char, buf.len()) } != 0 {
        return None;
    }
    let n = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    let s = String::from_utf8_lossy(&buf[..n]).into_owned();
    (!s.is_empty()).then_some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_choice_follows_the_table() {
        let job = Some("j");
        assert_eq!(Transport::parse(" shm ").unwrap(), Transport::Shm);
        assert!(Transport::parse("rdma").unwrap_err().to_string().contains("one of auto, shm, tcp"));
        assert_eq!(Transport::Auto.shm_job(true, job).unwrap().as_deref(), Some("j"));
        assert_eq!(Transport::Auto.shm_job(false, job).unwrap(), None);
        assert_eq!(Transport::Shm.shm_job(false, job).unwrap().as_deref(), Some("j"));
        assert_eq!(Transport::Tcp.shm_job(true, job).unwrap(), None);
        assert!(Transport::Shm.shm_job(false, None).is_err());
        // On a link, auto names this machine: pipes only to peers with the same name.
        let mut cfg = crate::Config::default();
        Transport::Auto.apply(&mut cfg, false, job).unwrap();
        assert_eq!((cfg.shm.as_deref(), cfg.host.clone()), (Some("j"), host_name()));
        Transport::Auto.apply(&mut cfg, false, None).unwrap();
        assert_eq!((cfg.shm.as_deref(), cfg.host.as_deref()), (None, None));
        Transport::Shm.apply(&mut cfg, false, job).unwrap();
        assert_eq!((cfg.shm.as_deref(), cfg.host.as_deref()), (Some("j"), None));
    }
}
