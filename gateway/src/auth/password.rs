//! Password hashes: Argon2id with OWASP's parameters (19 MiB, 2 passes, 1 lane) and a
//! 16-byte salt from the OS, written as a PHC string
//! (`$argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>`, unpadded base64). The gateway
//! hashes before a user command is written, so the salt travels in the command and the
//! engine applies it without randomness of its own.

use argon2::{Algorithm, Argon2, Params, Version};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD_NO_PAD;
use rill_protocol::value::PasswordHash;

use crate::error::GatewayError;

pub(crate) const SALT_LENGTH: usize = 16;
pub(crate) const HASH_LENGTH: usize = 32;

/// The most memory (KiB), passes and lanes a stored hash may ask for: a hash out of
/// these bounds is refused unread, so a bad entry cannot take a node's memory.
const MAX_MEMORY_KIB: u32 = 256 * 1024;
const MAX_PASSES: u32 = 16;
const MAX_LANES: u32 = 16;

/// A parsed hash: its parameters, salt and digest.
pub(crate) struct Hashed {
    params: Params,
    pub(crate) salt: Vec<u8>,
    pub(crate) hash: [u8; HASH_LENGTH],
}

impl Hashed {
    /// The hash of `password` with a fresh random salt.
    pub(crate) fn new(password: &[u8]) -> Result<Hashed, GatewayError> {
        let mut salt = vec![0; SALT_LENGTH];
        getrandom::fill(&mut salt).map_err(|e| {
            GatewayError::Security(format!("no randomness from the OS for password salts: {e}"))
        })?;
        let params = Params::default();
        let mut hash = [0; HASH_LENGTH];
        hasher(&params)
            .hash_password_into(password, &salt, &mut hash)
            .map_err(|e| GatewayError::Security(format!("hashing a password: {e}")))?;
        Ok(Hashed { params, salt, hash })
    }

    /// Reads a PHC string this module wrote; `None` for anything else.
    pub(crate) fn parse(text: &PasswordHash) -> Option<Hashed> {
        let mut parts = text.0.split('$');
        let (Some(""), Some("argon2id"), Some("v=19"), Some(params), Some(salt), Some(hash)) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return None;
        };
        if parts.next().is_some() {
            return None;
        }
        let (mut memory, mut passes, mut lanes) = (None, None, None);
        for pair in params.split(',') {
            let (name, value) = pair.split_once('=')?;
            let value: u32 = value.parse().ok()?;
            match name {
                "m" => memory = Some(value),
                "t" => passes = Some(value),
                "p" => lanes = Some(value),
                _ => return None,
            }
        }
        let (memory, passes, lanes) = (memory?, passes?, lanes?);
        if memory > MAX_MEMORY_KIB || passes > MAX_PASSES || lanes > MAX_LANES {
            return None;
        }
        let params = Params::new(memory, passes, lanes, Some(HASH_LENGTH)).ok()?;
        let salt = STANDARD_NO_PAD.decode(salt).ok()?;
        let hash: [u8; HASH_LENGTH] = STANDARD_NO_PAD.decode(hash).ok()?.try_into().ok()?;
        Some(Hashed { params, salt, hash })
    }

    /// The PHC string.
    pub(crate) fn text(&self) -> PasswordHash {
        PasswordHash(format!(
            "$argon2id$v=19$m={},t={},p={}${}${}",
            self.params.m_cost(),
            self.params.t_cost(),
            self.params.p_cost(),
            STANDARD_NO_PAD.encode(&self.salt),
            STANDARD_NO_PAD.encode(self.hash),
        ))
    }

    /// Whether `password` has this hash. Slow on purpose: call it off the async
    /// threads. Compared without an early exit, so the time says nothing of the hash.
    pub(crate) fn matches(&self, password: &[u8]) -> bool {
        let mut hash = [0; HASH_LENGTH];
        if hasher(&self.params)
            .hash_password_into(password, &self.salt, &mut hash)
            .is_err()
        {
            return false;
        }
        hash.iter()
            .zip(self.hash.iter())
            .fold(0u8, |difference, (a, b)| difference | (a ^ b))
            == 0
    }
}

fn hasher(params: &Params) -> Argon2<'static> {
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params.clone())
}

/// Hashes a password for a user command.
pub fn hash_password(password: &str) -> Result<PasswordHash, GatewayError> {
    Ok(Hashed::new(password.as_bytes())?.text())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_round_trips_through_its_text_and_checks_only_its_password() {
        let hashed = Hashed::new("s3cret ü".as_bytes()).expect("hashes");
        let text = hashed.text();
        assert!(
            text.0.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"),
            "{}",
            text.0
        );
        assert!(!text.0.contains("s3cret"));
        let parsed = Hashed::parse(&text).expect("parses");
        assert!(parsed.matches("s3cret ü".as_bytes()));
        assert!(!parsed.matches(b"s3cret"));
        // Two hashes of one password differ by their salt.
        assert_ne!(
            Hashed::new(b"x").unwrap().text(),
            Hashed::new(b"x").unwrap().text()
        );
    }

    #[test]
    fn foreign_or_oversized_hashes_are_refused_unread() {
        for text in [
            "",
            "plain",
            "$argon2i$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaA",
            "$argon2id$v=19$m=4194304,t=2,p=1$c2FsdHNhbHRzYWx0$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0$c2hvcnQ",
        ] {
            assert!(
                Hashed::parse(&PasswordHash(text.into())).is_none(),
                "{text}"
            );
        }
    }
}
