//! Basic authentication's users: passwords kept only as Argon2id hashes (salted, slow on
//! purpose), and a short-lived cache of credentials verified lately, keyed by a keyed
//! BLAKE2 digest, so that a client sending the same credentials on every request pays
//! the slow hash about once a minute.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use argon2::Argon2;
use blake2::digest::{FixedOutput, KeyInit, Update};
use parking_lot::Mutex;
use rill_config::InitialUser;
use tokio::sync::Semaphore;

use super::Principal;
use crate::error::GatewayError;

/// How long verified credentials are trusted without hashing again.
pub(crate) const VERIFIED_FOR: Duration = Duration::from_secs(60);

/// Most cached credentials; the cache is emptied when full (it refills on use).
const CACHE_CAPACITY: usize = 4096;

const SALT_LENGTH: usize = 16;
const HASH_LENGTH: usize = 32;

/// The cache key of a username and password.
type Digest = [u8; 32];

/// When credentials were verified, and whose they are.
type Verified = (Instant, Arc<User>);

/// One user: who it is and its password's hash.
struct User {
    principal: Principal,
    salt: [u8; SALT_LENGTH],
    hash: [u8; HASH_LENGTH],
}

/// Why credentials were refused (logged, never answered: the answer is the same).
#[derive(Debug, PartialEq)]
pub(crate) enum Mismatch {
    UnknownUser,
    WrongPassword,
}

impl Mismatch {
    pub(crate) fn reason(&self) -> &'static str {
        match self {
            Mismatch::UnknownUser => "no such user",
            Mismatch::WrongPassword => "wrong password",
        }
    }
}

pub(crate) struct BasicUsers {
    users: HashMap<String, Arc<User>>,
    /// Hashed against when the user does not exist, so the answer takes as long.
    decoy: Arc<User>,
    hasher: Argon2<'static>,
    /// Key of the cache digests, random per process.
    cache_key: [u8; 32],
    verified: Mutex<HashMap<Digest, Verified>>,
    /// Each verification holds Argon2's memory (19 MiB) and a core for a while: a flood
    /// of wrong passwords queues here instead of taking the node's memory.
    hashing: Semaphore,
}

impl BasicUsers {
    pub(crate) fn new(users: &[InitialUser]) -> Result<BasicUsers, GatewayError> {
        let hasher = Argon2::default(); // Argon2id, OWASP's parameters
        let hash_user = |principal: Principal, password: &[u8]| -> Result<User, GatewayError> {
            let mut salt = [0; SALT_LENGTH];
            random(&mut salt)?;
            let mut hash = [0; HASH_LENGTH];
            hasher
                .hash_password_into(password, &salt, &mut hash)
                .map_err(|e| GatewayError::Security(format!("hashing a password: {e}")))?;
            Ok(User {
                principal,
                salt,
                hash,
            })
        };
        let mut by_name = HashMap::new();
        for user in users {
            let principal = Principal {
                username: Some(user.username.clone()),
                name: user.name.clone(),
                email: user.email.clone(),
                groups: Vec::new(),
                valid_until: None,
            };
            let hashed = hash_user(principal, user.password.as_bytes())?;
            by_name.insert(user.username.clone(), Arc::new(hashed));
        }
        let mut decoy_password = [0; 16];
        random(&mut decoy_password)?;
        let decoy = Arc::new(hash_user(Principal::anonymous(), &decoy_password)?);
        let mut cache_key = [0; 32];
        random(&mut cache_key)?;
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Ok(BasicUsers {
            users: by_name,
            decoy,
            hasher,
            cache_key,
            verified: Mutex::new(HashMap::new()),
            hashing: Semaphore::new(cores),
        })
    }

    /// The user these credentials prove, or why not.
    pub(crate) async fn verify(
        self: &Arc<Self>,
        username: &str,
        password: Vec<u8>,
    ) -> Result<Principal, Mismatch> {
        let digest = self.digest(username, &password);
        if let Some(user) = self.cached(&digest) {
            return Ok(user.principal.clone());
        }
        let known = self.users.get(username).cloned();
        let user = known.clone().unwrap_or_else(|| self.decoy.clone());
        let matches = {
            let _permit = self
                .hashing
                .acquire()
                .await
                .map_err(|_| Mismatch::WrongPassword)?;
            let this = self.clone();
            let checked = user.clone();
            tokio::task::spawn_blocking(move || this.matches(&checked, &password))
                .await
                .unwrap_or(false)
        };
        match (known, matches) {
            (None, _) => Err(Mismatch::UnknownUser),
            (Some(_), false) => Err(Mismatch::WrongPassword),
            (Some(user), true) => {
                self.remember(digest, user.clone());
                Ok(user.principal.clone())
            }
        }
    }

    fn matches(&self, user: &User, password: &[u8]) -> bool {
        let mut hash = [0; HASH_LENGTH];
        if self
            .hasher
            .hash_password_into(password, &user.salt, &mut hash)
            .is_err()
        {
            return false;
        }
        // Compared without an early exit, so the time says nothing about the hash.
        hash.iter()
            .zip(user.hash.iter())
            .fold(0u8, |difference, (a, b)| difference | (a ^ b))
            == 0
    }

    /// The cache key of these credentials: a keyed digest, so the cache holds no
    /// password and an entry cannot be found without the process's key.
    fn digest(&self, username: &str, password: &[u8]) -> Digest {
        let mut mac =
            blake2::Blake2bMac::<blake2::digest::consts::U32>::new_from_slice(&self.cache_key)
                .expect("a 32-byte key suits BLAKE2b");
        mac.update(&(username.len() as u64).to_le_bytes());
        mac.update(username.as_bytes());
        mac.update(password);
        mac.finalize_fixed().into()
    }

    fn cached(&self, digest: &Digest) -> Option<Arc<User>> {
        let mut verified = self.verified.lock();
        match verified.get(digest) {
            Some((at, user)) if at.elapsed() < VERIFIED_FOR => Some(user.clone()),
            Some(_) => {
                verified.remove(digest);
                None
            }
            None => None,
        }
    }

    fn remember(&self, digest: Digest, user: Arc<User>) {
        let mut verified = self.verified.lock();
        if verified.len() >= CACHE_CAPACITY {
            verified.retain(|_, (at, _)| at.elapsed() < VERIFIED_FOR);
            if verified.len() >= CACHE_CAPACITY {
                verified.clear();
            }
        }
        verified.insert(digest, (Instant::now(), user));
    }
}

fn random(bytes: &mut [u8]) -> Result<(), GatewayError> {
    getrandom::fill(bytes).map_err(|e| {
        GatewayError::Security(format!("no randomness from the OS for password salts: {e}"))
    })
}

#[cfg(test)]
impl BasicUsers {
    pub(crate) fn is_cached(&self, username: &str, password: &[u8]) -> bool {
        self.cached(&self.digest(username, password)).is_some()
    }
}
