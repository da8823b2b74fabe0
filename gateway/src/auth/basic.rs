//! Basic authentication's users. The users are replicated cluster state (`USER`
//! records, made through `/v2/users`), read through a [`UserDirectory`] (a query to the
//! deployment partition, so separate gateways decide alike); passwords are kept only
//! as Argon2id hashes (`password.rs`). Credentials verified lately are cached for
//! [`VERIFIED_FOR`], keyed by a keyed BLAKE2 digest, so that a client sending the same
//! credentials on every request pays the slow hash and the lookup about once per
//! period; a user changed or deleted elsewhere stops working within that period (at
//! once on the gateway that made the change).
//!
//! The configured users (`security.initialization.users`) seed the replicated ones at
//! start (`ops::users::seed`). Until one is seeded (created, or found to exist) it is
//! accepted with its configured password, and so are all of them while the replicated
//! users cannot be read (no leader for the partitions asked, or no gateway in this
//! process): the management API stays reachable when the cluster is not.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use blake2::digest::{FixedOutput, KeyInit, Update};
use futures::future::BoxFuture;
use parking_lot::Mutex;
use rill_config::InitialUser;
use rill_protocol::value::{PasswordHash, UserRecord};
use tokio::sync::Semaphore;

use super::Principal;
use super::password::Hashed;
use crate::error::GatewayError;
use crate::ops::ClientError;

/// How long verified credentials are trusted without reading the user and hashing
/// again: the longest a changed or deleted user keeps working on another gateway.
pub const VERIFIED_FOR: Duration = Duration::from_secs(10);

/// Most cached credentials; the cache is emptied when full (it refills on use).
const CACHE_CAPACITY: usize = 4096;

/// The cache key of a username and password.
type Digest = [u8; 32];

/// When credentials were verified, and whose they are.
type Verified = (Instant, Arc<User>);

/// Where the replicated users are read (the gateway's operations layer; a map in
/// tests). `Ok(None)`: no such user; `Err`: the users cannot be read right now.
pub trait UserDirectory: Send + Sync {
    fn lookup<'a>(
        &'a self,
        username: &'a str,
    ) -> BoxFuture<'a, Result<Option<UserRecord>, ClientError>>;
}

/// One user: who it is and its password's hash.
struct User {
    principal: Principal,
    hashed: Hashed,
}

impl User {
    fn from_record(record: &UserRecord) -> Option<User> {
        let non_empty = |text: &str| (!text.is_empty()).then(|| text.to_owned());
        Some(User {
            principal: Principal {
                username: Some(record.username.clone()),
                name: non_empty(&record.name),
                email: non_empty(&record.email),
                groups: Vec::new(),
                valid_until: None,
            },
            hashed: Hashed::parse(&record.password)?,
        })
    }
}

/// A configured user, and whether it is known to be in the replicated users.
struct Configured {
    user: Arc<User>,
    seeded: AtomicBool,
}

/// A configured user to create in the replicated users.
pub(crate) struct Seed {
    pub username: String,
    pub name: String,
    pub email: String,
    pub password: PasswordHash,
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
    configured: HashMap<String, Configured>,
    directory: OnceLock<Arc<dyn UserDirectory>>,
    /// Hashed against when the user does not exist, so the answer takes as long.
    decoy: Arc<User>,
    /// Key of the cache digests, random per process.
    cache_key: [u8; 32],
    verified: Mutex<HashMap<Digest, Verified>>,
    /// Each verification holds Argon2's memory (19 MiB) and a core for a while: a flood
    /// of wrong passwords queues here instead of taking the node's memory.
    hashing: Semaphore,
}

impl BasicUsers {
    pub(crate) fn new(users: &[InitialUser]) -> Result<BasicUsers, GatewayError> {
        let mut configured = HashMap::new();
        for user in users {
            let principal = Principal {
                username: Some(user.username.clone()),
                name: user.name.clone(),
                email: user.email.clone(),
                groups: Vec::new(),
                valid_until: None,
            };
            let hashed = Hashed::new(user.password.as_bytes())?;
            configured.insert(
                user.username.clone(),
                Configured {
                    user: Arc::new(User { principal, hashed }),
                    seeded: AtomicBool::new(false),
                },
            );
        }
        let mut decoy_password = [0; 16];
        random(&mut decoy_password)?;
        let decoy = Arc::new(User {
            principal: Principal::anonymous(),
            hashed: Hashed::new(&decoy_password)?,
        });
        let mut cache_key = [0; 32];
        random(&mut cache_key)?;
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Ok(BasicUsers {
            configured,
            directory: OnceLock::new(),
            decoy,
            cache_key,
            verified: Mutex::new(HashMap::new()),
            hashing: Semaphore::new(cores),
        })
    }

    /// Reads the replicated users from `directory` from now on (the first one given).
    pub(crate) fn attach(&self, directory: Arc<dyn UserDirectory>) {
        let _ = self.directory.set(directory);
    }

    /// The configured users not yet known to be in the replicated users.
    pub(crate) fn unseeded(&self) -> Vec<Seed> {
        let mut seeds: Vec<Seed> = self
            .configured
            .iter()
            .filter(|(_, c)| !c.seeded.load(Ordering::Acquire))
            .map(|(username, c)| Seed {
                username: username.clone(),
                name: c.user.principal.name.clone().unwrap_or_default(),
                email: c.user.principal.email.clone().unwrap_or_default(),
                password: c.user.hashed.text(),
            })
            .collect();
        seeds.sort_by(|a, b| a.username.cmp(&b.username));
        seeds
    }

    /// The configured user is in the replicated users: they decide from now on.
    pub(crate) fn seeded(&self, username: &str) {
        if let Some(configured) = self.configured.get(username) {
            configured.seeded.store(true, Ordering::Release);
        }
    }

    /// Forgets the cached credentials of a user changed or deleted through this gateway.
    pub(crate) fn forget(&self, username: &str) {
        self.verified
            .lock()
            .retain(|_, (_, user)| user.principal.username.as_deref() != Some(username));
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
        let known = self.find(username).await;
        let user = known.clone().unwrap_or_else(|| self.decoy.clone());
        let matches = {
            let _permit = self
                .hashing
                .acquire()
                .await
                .map_err(|_| Mismatch::WrongPassword)?;
            let checked = user.clone();
            tokio::task::spawn_blocking(move || checked.hashed.matches(&password))
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

    /// The user to check credentials against: the replicated one; a configured one not
    /// seeded yet; any configured one while the replicated users cannot be read.
    async fn find(&self, username: &str) -> Option<Arc<User>> {
        let configured = self.configured.get(username);
        let Some(directory) = self.directory.get() else {
            return configured.map(|c| c.user.clone());
        };
        match directory.lookup(username).await {
            Ok(Some(record)) => {
                let user = User::from_record(&record);
                if user.is_none() {
                    tracing::warn!(
                        username,
                        "user refused: its stored password hash is unreadable"
                    );
                }
                user.map(Arc::new)
            }
            Ok(None) => configured
                .filter(|c| !c.seeded.load(Ordering::Acquire))
                .map(|c| c.user.clone()),
            Err(error) => {
                tracing::debug!(username, %error, "replicated users unreadable: configured users decide");
                configured.map(|c| c.user.clone())
            }
        }
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
