//! Where a rank learns who it is: the environment its launcher set.
//!
//! A rank takes its rank and world size from the first of these that is present:
//!
//! | source | rank | size | local rank |
//! | --- | --- | --- | --- |
//! | explicit | `LINERATE_RANK` | `LINERATE_WORLD_SIZE` | `LINERATE_LOCAL_RANK` |
//! | OpenMPI `mpirun` | `OMPI_COMM_WORLD_RANK` | `OMPI_COMM_WORLD_SIZE` | `OMPI_COMM_WORLD_LOCAL_RANK` |
//! | PMI (MPICH/Hydra, Slurm with PMI) | `PMI_RANK` | `PMI_SIZE` | `MPI_LOCALRANKID` |
//! | Slurm `srun` | `SLURM_PROCID` | `SLURM_NTASKS` | `SLURM_LOCALID` |
//!
//! The rendezvous (rank 0's address) comes from `LINERATE_ROOT_ADDR` (`a.b.c.d:port`, or
//! `a.b.c.d` with the default port), or from `MASTER_ADDR` / `MASTER_PORT` in the style of
//! torch.distributed; it is optional (deterministic addressing needs none). The name of the
//! shared-memory fabric of the job on one machine comes from `LINERATE_FABRIC` (set by
//! `linerate collective launch`), or else from the launcher's job id, so that `mpirun` and
//! `srun` need no extra variable:
//!
//! | launcher | fabric name |
//! | --- | --- |
//! | OpenMPI | `ompi-` + `OMPI_MCA_ess_base_jobid` (or `PMIX_NAMESPACE`) |
//! | Slurm | `slurm-` + `SLURM_JOB_ID` + `.` + `SLURM_STEP_ID` |
//! | PMI | `pmi-` + `PMI_KVSNAME` (MPICH's Hydra) |
//!
//! A rank on a real interface instead of the fabric (ranks on different machines) names its
//! link in `LINERATE_LINK` (`af_xdp:IFACE`, `af_packet:IFACE`, see [`link::spec`]) and its
//! address in `LINERATE_IP` (`a.b.c.d/len`); it joins through rank 0 at the rendezvous
//! address (see [`crate::on_link`]).
//!
//! Parsing is a
//! pure function of a variable lookup, [`parse_launch`], so it is tested without touching
//! the process environment; [`from_env`] applies it to the real one.

use crate::CollectiveError;
use std::net::{IpAddr, SocketAddr};

/// Port of the rendezvous when only an address is given.
pub const DEFAULT_ROOT_PORT: u16 = 7470;

/// Which launcher described the rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Launcher {
    /// `LINERATE_*` variables.
    Explicit,
    /// OpenMPI's `mpirun` / `mpiexec`.
    OpenMpi,
    /// A PMI environment.
    Pmi,
    /// Slurm's `srun`.
    Slurm,
}

/// What a rank learned from its launcher.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// This rank, `0..size`.
    pub rank: usize,
    /// Number of ranks.
    pub size: usize,
    /// Rank among the ranks on this machine, if the launcher says.
    pub local_rank: Option<usize>,
    /// Rank 0's rendezvous address, if given (IPv4 or IPv6).
    pub root: Option<SocketAddr>,
    /// Where rank and size came from.
    pub launcher: Launcher,
    /// Name of the job's shared-memory fabric (`LINERATE_FABRIC`), if given.
    pub fabric: Option<String>,
    /// The link to join on instead of the fabric (`LINERATE_LINK`, a link spec), if given.
    pub link: Option<String>,
    /// This rank's address on that link (`LINERATE_IP`, `a.b.c.d/len`, optionally followed by
    /// IPv6 ones after commas), if given.
    pub ip: Option<String>,
}

const SOURCES: [(Launcher, &str, &str, &str); 4] = [
    (Launcher::Explicit, "LINERATE_RANK", "LINERATE_WORLD_SIZE", "LINERATE_LOCAL_RANK"),
    (Launcher::OpenMpi, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"),
    (Launcher::Pmi, "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"),
    (Launcher::Slurm, "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"),
];

fn number(get: &impl Fn(&str) -> Option<String>, var: &str) -> Result<Option<usize>, CollectiveError> {
    match get(var) {
        None => Ok(None),
        Some(v) => v
            .trim()
            .parse::<usize>()
            .map(Some)
            .map_err(|_| CollectiveError::Env(format!("{var}={v:?} is not a non-negative integer"))),
    }
}

/// A rendezvous address, `a.b.c.d:port`, `[v6addr]:port`, or an address alone (port
/// [`DEFAULT_ROOT_PORT`]); `None` if it is neither.
pub fn parse_root(s: &str) -> Option<SocketAddr> {
    let t = s.trim();
    t.parse::<SocketAddr>()
        .ok()
        .or_else(|| t.parse::<IpAddr>().ok().map(|ip| SocketAddr::new(ip, DEFAULT_ROOT_PORT)))
        .filter(|a| a.port() != 0 && !a.ip().is_unspecified())
}

fn root_addr(get: &impl Fn(&str) -> Option<String>) -> Result<Option<SocketAddr>, CollectiveError> {
    if let Some(v) = get("LINERATE_ROOT_ADDR") {
        return parse_root(&v)
            .map(Some)
            .ok_or_else(|| CollectiveError::Env(format!("LINERATE_ROOT_ADDR={v:?} is not an IP address[:port]")));
    }
    let Some(addr) = get("MASTER_ADDR") else { return Ok(None) };
    let ip = addr
        .trim()
        .parse::<IpAddr>()
        .map_err(|_| CollectiveError::Env(format!("MASTER_ADDR={addr:?} is not an IP address")))?;
    let port = match get("MASTER_PORT") {
        None => DEFAULT_ROOT_PORT,
        Some(p) => p
            .trim()
            .parse::<u16>()
            .ok()
            .filter(|&p| p != 0)
            .ok_or_else(|| CollectiveError::Env(format!("MASTER_PORT={p:?} is not a port number")))?,
    };
    Ok(Some(SocketAddr::new(ip, port)))
}

/// The fabric name derived from the launcher's job id (see the module docs), if it has one.
fn job_fabric(get: &impl Fn(&str) -> Option<String>, launcher: Launcher) -> Option<String> {
    let first =
        |vars: &[&str]| vars.iter().find_map(|v| get(v).map(|x| x.trim().to_string()).filter(|x| !x.is_empty()));
    let id = match launcher {
        Launcher::Explicit => return None,
        Launcher::OpenMpi => format!("ompi-{}", first(&["OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE"])?),
        Launcher::Slurm => {
            let step = first(&["SLURM_STEP_ID"]).unwrap_or_else(|| "0".into());
            format!("slurm-{}.{step}", first(&["SLURM_JOB_ID", "SLURM_JOBID"])?)
        }
        Launcher::Pmi => format!("pmi-{}", first(&["PMI_KVSNAME"])?),
    };
    // A file name in /dev/shm: keep letters, digits and `-_.`; the rest becomes `_`.
    Some(id.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect())
}

/// Reads a rank's description through `get` (a variable lookup, such as
/// `|k| std::env::var(k).ok()`). Errors name the variable that is missing or malformed.
pub fn parse_launch(get: impl Fn(&str) -> Option<String>) -> Result<Launch, CollectiveError> {
    for (launcher, rank_var, size_var, local_var) in SOURCES {
        let (rank, size) = (number(&get, rank_var)?, number(&get, size_var)?);
        let (rank, size) = match (rank, size) {
            (None, None) => continue,
            (Some(r), Some(s)) => (r, s),
            (Some(_), None) => return Err(CollectiveError::Env(format!("{rank_var} is set but {size_var} is not"))),
            (None, Some(_)) => return Err(CollectiveError::Env(format!("{size_var} is set but {rank_var} is not"))),
        };
        if size == 0 || rank >= size {
            return Err(CollectiveError::Env(format!("{rank_var}={rank} is not a rank of {size_var}={size}")));
        }
        let text = |var: &str| get(var).map(|f| f.trim().to_string()).filter(|f| !f.is_empty());
        let fabric = text("LINERATE_FABRIC").or_else(|| job_fabric(&get, launcher));
        return Ok(Launch {
            rank,
            size,
            local_rank: number(&get, local_var)?,
            root: root_addr(&get)?,
            launcher,
            fabric,
            link: text("LINERATE_LINK"),
            ip: text("LINERATE_IP"),
        });
    }
    Err(CollectiveError::Env(
        "no launcher variables: set LINERATE_RANK and LINERATE_WORLD_SIZE, or start under mpirun, srun or a PMI launcher"
            .into(),
    ))
}

/// [`parse_launch`] on this process's environment.
pub fn from_env() -> Result<Launch, CollectiveError> {
    parse_launch(|k| std::env::var(k).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn each_launcher_is_recognised() {
        let cases = [
            (
                vec![("OMPI_COMM_WORLD_RANK", "3"), ("OMPI_COMM_WORLD_SIZE", "4"), ("OMPI_COMM_WORLD_LOCAL_RANK", "1")],
                Launcher::OpenMpi,
                3,
                4,
                Some(1),
            ),
            (
                vec![("SLURM_PROCID", "0"), ("SLURM_NTASKS", "2"), ("SLURM_LOCALID", "0")],
                Launcher::Slurm,
                0,
                2,
                Some(0),
            ),
            (vec![("PMI_RANK", "6"), ("PMI_SIZE", "7")], Launcher::Pmi, 6, 7, None),
            (vec![("LINERATE_RANK", "1"), ("LINERATE_WORLD_SIZE", "2")], Launcher::Explicit, 1, 2, None),
        ];
        for (vars, launcher, rank, size, local) in cases {
            let l = parse_launch(env(&vars)).unwrap();
            assert_eq!((l.launcher, l.rank, l.size, l.local_rank, l.root), (launcher, rank, size, local, None));
            assert_eq!(l.fabric, None);
        }
        let l = parse_launch(env(&[("PMI_RANK", "0"), ("PMI_SIZE", "1"), ("LINERATE_FABRIC", "job-7")])).unwrap();
        assert_eq!(l.fabric.as_deref(), Some("job-7"));
        assert_eq!((l.link, l.ip), (None, None));
        let l = parse_launch(env(&[
            ("OMPI_COMM_WORLD_RANK", "1"),
            ("OMPI_COMM_WORLD_SIZE", "3"),
            ("LINERATE_LINK", " af_xdp:veth0 "),
            ("LINERATE_IP", "10.9.0.2/24"),
        ]))
        .unwrap();
        assert_eq!((l.link.as_deref(), l.ip.as_deref()), (Some("af_xdp:veth0"), Some("10.9.0.2/24")));
    }

    #[test]
    fn the_fabric_name_comes_from_the_launchers_job_id() {
        let fab = |vars: &[(&str, &str)]| parse_launch(env(vars)).unwrap().fabric;
        let ompi = [("OMPI_COMM_WORLD_RANK", "0"), ("OMPI_COMM_WORLD_SIZE", "2")];
        assert_eq!(
            fab(&[ompi[0], ompi[1], ("OMPI_MCA_ess_base_jobid", "1209597953")]).as_deref(),
            Some("ompi-1209597953")
        );
        assert_eq!(fab(&[ompi[0], ompi[1], ("PMIX_NAMESPACE", "prterun-h@1")]).as_deref(), Some("ompi-prterun-h_1"));
        let slurm = [("SLURM_PROCID", "1"), ("SLURM_NTASKS", "2"), ("SLURM_JOB_ID", "77")];
        assert_eq!(fab(&slurm).as_deref(), Some("slurm-77.0"));
        assert_eq!(fab(&[slurm[0], slurm[1], slurm[2], ("SLURM_STEP_ID", "3")]).as_deref(), Some("slurm-77.3"));
        assert_eq!(
            fab(&[("PMI_RANK", "0"), ("PMI_SIZE", "2"), ("PMI_KVSNAME", "kvs_9_0")]).as_deref(),
            Some("pmi-kvs_9_0")
        );
        // The explicit name wins; explicit ranks have no job id.
        assert_eq!(
            fab(&[ompi[0], ompi[1], ("OMPI_MCA_ess_base_jobid", "5"), ("LINERATE_FABRIC", "mine")]).as_deref(),
            Some("mine")
        );
        assert_eq!(fab(&[("LINERATE_RANK", "0"), ("LINERATE_WORLD_SIZE", "1"), ("SLURM_JOB_ID", "7")]), None);
        assert_eq!(fab(&ompi[..]), None);
    }

    #[test]
    fn explicit_variables_win_over_a_launcher_and_pmi_over_slurm() {
        let l = parse_launch(env(&[
            ("LINERATE_RANK", "2"),
            ("LINERATE_WORLD_SIZE", "3"),
            ("OMPI_COMM_WORLD_RANK", "0"),
            ("OMPI_COMM_WORLD_SIZE", "8"),
        ]))
        .unwrap();
        assert_eq!((l.launcher, l.rank, l.size), (Launcher::Explicit, 2, 3));
        let l =
            parse_launch(env(&[("SLURM_PROCID", "1"), ("SLURM_NTASKS", "4"), ("PMI_RANK", "1"), ("PMI_SIZE", "4")]))
                .unwrap();
        assert_eq!(l.launcher, Launcher::Pmi);
    }

    #[test]
    fn root_address_forms() {
        let base = [("PMI_RANK", "0"), ("PMI_SIZE", "2")];
        let with = |extra: &[(&str, &str)]| {
            let mut v = base.to_vec();
            v.extend_from_slice(extra);
            parse_launch(env(&v))
        };
        assert_eq!(
            with(&[("LINERATE_ROOT_ADDR", "10.0.0.1:9000")]).unwrap().root,
            Some("10.0.0.1:9000".parse().unwrap())
        );
        assert_eq!(with(&[("LINERATE_ROOT_ADDR", " 10.0.0.1 ")]).unwrap().root, Some("10.0.0.1:7470".parse().unwrap()));
        assert_eq!(
            with(&[("MASTER_ADDR", "10.9.0.1"), ("MASTER_PORT", "29500")]).unwrap().root,
            Some("10.9.0.1:29500".parse().unwrap())
        );
        assert_eq!(with(&[("MASTER_ADDR", "10.9.0.1")]).unwrap().root, Some("10.9.0.1:7470".parse().unwrap()));
        // The explicit variable wins over MASTER_*.
        assert_eq!(
            with(&[("LINERATE_ROOT_ADDR", "10.0.0.5:1"), ("MASTER_ADDR", "10.9.0.1")]).unwrap().root,
            Some("10.0.0.5:1".parse().unwrap())
        );
        // IPv6 roots.
        assert_eq!(with(&[("MASTER_ADDR", "fd09::1")]).unwrap().root, Some("[fd09::1]:7470".parse().unwrap()));
        assert_eq!(
            with(&[("LINERATE_ROOT_ADDR", "[fd09::1]:9000")]).unwrap().root,
            Some("[fd09::1]:9000".parse().unwrap())
        );
        for bad in [
            vec![("LINERATE_ROOT_ADDR", "host.example:80")],
            vec![("LINERATE_ROOT_ADDR", "::")],
            vec![("MASTER_ADDR", "10.0.0.1"), ("MASTER_PORT", "0")],
            vec![("MASTER_ADDR", "10.0.0.1"), ("MASTER_PORT", "70000")],
        ] {
            assert!(matches!(with(&bad), Err(CollectiveError::Env(_))), "{bad:?}");
        }
    }

    #[test]
    fn malformed_or_incomplete_variables_are_named() {
        let msg = |vars: &[(&str, &str)]| parse_launch(env(vars)).unwrap_err().to_string();
        assert!(msg(&[]).contains("no launcher variables"));
        assert!(msg(&[("OMPI_COMM_WORLD_RANK", "1")]).contains("OMPI_COMM_WORLD_SIZE"));
        assert!(msg(&[("SLURM_NTASKS", "4")]).contains("SLURM_PROCID"));
        assert!(msg(&[("PMI_RANK", "x"), ("PMI_SIZE", "2")]).contains("PMI_RANK=\"x\""));
        assert!(msg(&[("PMI_RANK", "2"), ("PMI_SIZE", "2")]).contains("not a rank"));
        assert!(msg(&[("PMI_RANK", "0"), ("PMI_SIZE", "0")]).contains("not a rank"));
        assert!(msg(&[("PMI_RANK", "-1"), ("PMI_SIZE", "2")]).contains("PMI_RANK"));
    }
}
