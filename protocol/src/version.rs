//! What versions a Rill process speaks, as peers tell each other on every connection
//! (docs/decisions/versions.md):
//!
//! ```text
//!  dialer ── hello / hello-ack (node ids) ──► listener
//!         ── VERSION request: Announcement ─► judged by `compatibility`; recorded
//!         ◄── Announcement (or a refusal naming both versions, then the close)
//! ```
//!
//! Three numbers are announced: the Rill release (`BROKER_VERSION`), the range of wire
//! versions (the encodings of the command API and the raft messages) and the range of
//! engine versions (what may be written to a partition's log, see `required_engine_version`
//! on commands). The announcement is JSON, so a later release adds fields an earlier one
//! ignores.

use serde::{Deserialize, Serialize};

use crate::BROKER_VERSION;

/// The wire version this build speaks: 1 is every build before the version handshake
/// (which announces nothing), 2 is the first that announces itself.
pub const WIRE_VERSION: u16 = 2;
/// The oldest wire version this build talks to.
pub const MIN_WIRE_VERSION: u16 = 1;

/// The engine version the first release wrote (and a partition starts at): no
/// `YieldJob`, `Referenced`, ad-hoc subprocesses, canceling task listeners, history
/// expiry or backup checkpoints in the log.
pub const ENGINE_VERSION_1: u32 = 1;
/// Engine version 2: everything this build writes.
pub const ENGINE_VERSION_2: u32 = 2;
/// The engine versions this build applies: it reads logs written at any of them.
pub const ENGINE_VERSIONS: EngineVersions = EngineVersions {
    min: ENGINE_VERSION_1,
    max: ENGINE_VERSION_2,
};

/// Debug builds only: announce this Rill version instead of the build's (tests emulate
/// an incompatible peer without a second build).
pub const DEBUG_ANNOUNCE_VERSION_ENV: &str = "RILL_DEBUG_ANNOUNCE_VERSION";
/// Debug builds only: `MIN..=MAX` (e.g. `1..=1`), the engine versions to announce and
/// apply instead of the build's (tests emulate a broker of an older release).
pub const DEBUG_ENGINE_VERSIONS_ENV: &str = "RILL_DEBUG_ENGINE_VERSIONS";

/// A range of engine versions, both ends included.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EngineVersions {
    pub min: u32,
    pub max: u32,
}

impl EngineVersions {
    pub fn contains(&self, version: u32) -> bool {
        (self.min..=self.max).contains(&version)
    }

    fn overlaps(&self, other: &EngineVersions) -> bool {
        self.min <= other.max && other.min <= self.max
    }

    /// Parses `MIN..=MAX` (or a single version).
    pub fn parse(text: &str) -> Option<EngineVersions> {
        let (min, max) = match text.trim().split_once("..=") {
            Some((min, max)) => (min.trim().parse().ok()?, max.trim().parse().ok()?),
            None => {
                let one = text.trim().parse().ok()?;
                (one, one)
            }
        };
        (min >= 1 && min <= max).then_some(EngineVersions { min, max })
    }
}

impl std::fmt::Display for EngineVersions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}..={}", self.min, self.max)
    }
}

/// The engine versions this process applies and announces: the build's, or in a debug
/// build what [`DEBUG_ENGINE_VERSIONS_ENV`] says.
pub fn supported_engine_versions() -> EngineVersions {
    #[cfg(debug_assertions)]
    if let Some(versions) = std::env::var(DEBUG_ENGINE_VERSIONS_ENV)
        .ok()
        .and_then(|text| EngineVersions::parse(&text))
    {
        return versions;
    }
    ENGINE_VERSIONS
}

/// What a process announces about itself on a connection.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Announcement {
    /// The Rill release, `MAJOR.MINOR.PATCH`.
    pub rill: String,
    pub wire_min: u16,
    pub wire_max: u16,
    /// The engine versions it applies; `None` for a process that runs no partition (a
    /// gateway).
    #[serde(default)]
    pub engine: Option<EngineVersions>,
    /// Set on the announcement made up for a peer of a build before the handshake.
    #[serde(skip)]
    pub legacy: bool,
}

impl Announcement {
    /// This process's announcement.
    pub fn this_build() -> Announcement {
        #[cfg(debug_assertions)]
        let rill = std::env::var(DEBUG_ANNOUNCE_VERSION_ENV)
            .ok()
            .filter(|v| parse_release(v).is_some())
            .unwrap_or_else(|| BROKER_VERSION.to_owned());
        #[cfg(not(debug_assertions))]
        let rill = BROKER_VERSION.to_owned();
        Announcement {
            rill,
            wire_min: MIN_WIRE_VERSION,
            wire_max: WIRE_VERSION,
            engine: Some(supported_engine_versions()),
            legacy: false,
        }
    }

    /// What a peer of a build before the handshake is taken to be: wire version 1, and
    /// engine version 1 only.
    pub fn legacy() -> Announcement {
        Announcement {
            rill: "(a release before the version handshake)".to_owned(),
            wire_min: 1,
            wire_max: 1,
            engine: Some(EngineVersions {
                min: ENGINE_VERSION_1,
                max: ENGINE_VERSION_1,
            }),
            legacy: true,
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("an announcement always encodes")
    }

    pub fn decode(bytes: &[u8]) -> Result<Announcement, String> {
        serde_json::from_slice(bytes).map_err(|e| format!("malformed version announcement: {e}"))
    }
}

impl std::fmt::Display for Announcement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Rill {} (wire {}..={}",
            self.rill, self.wire_min, self.wire_max
        )?;
        if let Some(engine) = self.engine {
            write!(f, ", engine versions {engine}")?;
        }
        f.write_str(")")
    }
}

/// `MAJOR.MINOR.PATCH` of a release string (a pre-release suffix is ignored).
fn parse_release(text: &str) -> Option<(u64, u64, u64)> {
    let core = text.split(['-', '+']).next()?;
    let mut parts = core.split('.').map(|p| p.parse::<u64>().ok());
    let major = parts.next()??;
    let minor = parts.next()??;
    let patch = parts.next().unwrap_or(Some(0))?;
    Some((major, minor, patch))
}

/// Whether a process announcing `ours` talks to one announcing `theirs`. The rule:
/// the same major release and at most one minor release apart (a rolling upgrade goes
/// one minor step at a time), overlapping wire versions, and overlapping engine
/// versions when both run partitions. `Err` says why not; [`refusal`] words it with
/// both sides' versions.
pub fn compatibility(ours: &Announcement, theirs: &Announcement) -> Result<(), String> {
    if !theirs.legacy && !ours.legacy {
        let (Some(a), Some(b)) = (parse_release(&ours.rill), parse_release(&theirs.rill)) else {
            return Err("a Rill version is not MAJOR.MINOR.PATCH".to_owned());
        };
        if a.0 != b.0 {
            return Err("releases of different major versions never mix".to_owned());
        }
        if a.1.abs_diff(b.1) > 1 {
            return Err(
                "releases mix only one minor version apart; upgrade one minor \
                 version at a time"
                    .to_owned(),
            );
        }
    }
    if ours.wire_min > theirs.wire_max || theirs.wire_min > ours.wire_max {
        return Err("they share no wire version".to_owned());
    }
    if let (Some(a), Some(b)) = (&ours.engine, &theirs.engine)
        && !a.overlaps(b)
    {
        return Err("they share no engine version".to_owned());
    }
    Ok(())
}

/// The one line a refused connection is logged with, on either side: both processes
/// by name with their versions, and why they do not talk.
pub fn refusal(
    name: &str,
    announced: &Announcement,
    other_name: &str,
    other: &Announcement,
    why: &str,
) -> String {
    format!(
        "incompatible versions: {name} runs {announced}, {other_name} runs {other}: {why} \
         (see \"Upgrades\" in docs/operations.md)"
    )
}

/// Marks a refusal in a handshake failure, as told to the other side.
pub const REFUSAL_PREFIX: &str = "incompatible versions:";

#[cfg(test)]
mod tests {
    use super::*;

    fn at(rill: &str, engine: (u32, u32)) -> Announcement {
        Announcement {
            rill: rill.to_owned(),
            wire_min: 1,
            wire_max: 2,
            engine: Some(EngineVersions {
                min: engine.0,
                max: engine.1,
            }),
            legacy: false,
        }
    }

    #[test]
    fn patch_and_adjacent_minor_releases_mix_and_others_do_not() {
        let ours = at("1.4.2", (1, 2));
        assert_eq!(compatibility(&ours, &at("1.4.0", (1, 2))), Ok(()));
        assert_eq!(compatibility(&ours, &at("1.5.7", (1, 3))), Ok(()));
        assert_eq!(compatibility(&ours, &at("1.3.1-rc1", (1, 1))), Ok(()));
        let newer = at("1.6.0", (1, 3));
        let error = compatibility(&ours, &newer).unwrap_err();
        assert!(error.contains("one minor version"), "{error}");
        let line = refusal("node 1", &ours, "node 2", &newer, &error);
        assert!(line.starts_with(REFUSAL_PREFIX), "{line}");
        assert!(
            line.contains("node 1 runs Rill 1.4.2 (wire 1..=2, engine versions 1..=2)")
                && line.contains("node 2 runs Rill 1.6.0"),
            "{line}"
        );
        let error = compatibility(&ours, &at("2.4.2", (1, 2))).unwrap_err();
        assert!(error.contains("major"), "{error}");
        let error = compatibility(&ours, &at("1.5.0", (3, 4))).unwrap_err();
        assert!(error.contains("no engine version"), "{error}");
    }

    #[test]
    fn a_peer_before_the_handshake_is_taken_as_wire_and_engine_version_1() {
        let ours = Announcement::this_build();
        assert_eq!(compatibility(&ours, &Announcement::legacy()), Ok(()));
        let mut newer = ours.clone();
        newer.wire_min = 2;
        let error = compatibility(&newer, &Announcement::legacy()).unwrap_err();
        assert!(error.contains("no wire version"), "{error}");
    }

    #[test]
    fn announcements_round_trip_and_ignore_fields_added_later() {
        let ours = at("0.1.0", (1, 2));
        assert_eq!(Announcement::decode(&ours.encode()).unwrap(), ours);
        let later = br#"{"rill":"0.2.0","wire_min":1,"wire_max":3,"engine":{"min":1,"max":3},"features":["x"]}"#;
        let decoded = Announcement::decode(later).unwrap();
        assert_eq!(decoded.rill, "0.2.0");
        assert_eq!(decoded.engine, Some(EngineVersions { min: 1, max: 3 }));
        let gateway = br#"{"rill":"0.2.0","wire_min":1,"wire_max":3}"#;
        assert_eq!(Announcement::decode(gateway).unwrap().engine, None);
        assert!(Announcement::decode(b"[1,2]").is_err());
    }

    #[test]
    fn engine_version_ranges_parse() {
        assert_eq!(
            EngineVersions::parse("1..=1"),
            Some(EngineVersions { min: 1, max: 1 })
        );
        assert_eq!(
            EngineVersions::parse(" 2 "),
            Some(EngineVersions { min: 2, max: 2 })
        );
        assert_eq!(EngineVersions::parse("2..=1"), None);
        assert_eq!(EngineVersions::parse("0..=1"), None);
        assert_eq!(EngineVersions::parse("x"), None);
    }
}
