//! Users of basic authentication, and how their passwords are kept.

use serde::{Deserialize, Serialize};

use super::RecordValue;

/// A password as Rill keeps it: the text of a slow salted hash (Argon2id, PHC string
/// format), never the password. The gateway hashes (and picks the salt) before the
/// command is written, so applying it is deterministic. `Debug` never shows it, and a
/// record loses it when its draft is completed ([`crate::RecordDraft::into_record`]):
/// it lives in commands and engine state only.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PasswordHash(pub String);

impl PasswordHash {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Debug for PasswordHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() {
            f.write_str("PasswordHash(none)")
        } else {
            f.write_str("PasswordHash(<redacted>)")
        }
    }
}

/// USER: a user of basic authentication (Zeebe's `UserRecord`). `password` holds the
/// hash in the engine's drafts and in the inter-partition commands that distribute the
/// user, and is empty in every record written, exported or stored in the history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserRecord {
    pub user_key: i64,
    pub username: String,
    pub name: String,
    pub email: String,
    pub password: PasswordHash,
}

impl RecordValue {
    /// Drops what a record must never carry (a user's password hash).
    pub fn strip_secrets(&mut self) {
        if let RecordValue::User(user) = self {
            user.password = PasswordHash::default();
        }
    }
}
