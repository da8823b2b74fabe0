//! Users of basic authentication (Camunda's `/v2/users`): created, changed and deleted
//! through the deployment partition, which distributes them to every partition; read
//! from the history store (without any hash), and read with their hash from the
//! engine's state for logins only ([`Directory`]). Passwords are hashed here, with a
//! fresh salt, before the command is written: the command carries the hash, never the
//! password, and no answer or log line carries either.
//!
//! [`seed`] creates the configured users (`security.initialization.users`) that do not
//! exist yet, at start, and retries until each is created or found to exist.

use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::future::BoxFuture;
use rill_protocol::history::{Condition, FieldValue, HistoricUser, Search, SortBy, UserField};
use rill_protocol::value::{PasswordHash, UserRecord};
use rill_protocol::{
    Command, PartitionId, Query, QueryResult, RecordValue, RejectionType, UserCommand,
};

use super::deployments::DEPLOYMENT_PARTITION;
use super::{AppState, ClientError, operation, search};
use crate::auth::{UserDirectory, hash_password};

/// What a client gives for a new user (checked by the API adapter).
pub struct NewUser {
    pub username: String,
    pub name: String,
    pub email: String,
    pub password: String,
}

/// What a client changes on a user (`None`: unchanged).
pub struct UserChanges {
    pub name: Option<String>,
    pub email: Option<String>,
    pub password: Option<String>,
}

/// Hashes off the async threads: Argon2id is slow on purpose.
async fn hashed(password: String) -> Result<PasswordHash, ClientError> {
    tokio::task::spawn_blocking(move || hash_password(&password))
        .await
        .map_err(|e| ClientError::internal(format!("hashing the password failed: {e}")))?
        .map_err(|e| ClientError::internal(e.to_string()))
}

async fn submit_user(state: &AppState, command: UserCommand) -> Result<UserRecord, ClientError> {
    let username = command.username().to_owned();
    let accepted = state
        .dispatch
        .submit(
            DEPLOYMENT_PARTITION,
            Command::User(command),
            state.settings.request_timeout,
        )
        .await?;
    // Credentials this gateway cached for the user go at once (elsewhere within the
    // cache's bound).
    state.authenticator.forget_user(&username);
    match accepted.value {
        RecordValue::User(user) => Ok(user),
        other => Err(ClientError::unexpected_answer("user", &other)),
    }
}

pub async fn create_user(state: &AppState, user: NewUser) -> Result<UserRecord, ClientError> {
    operation("CreateUser", None, async {
        let password = hashed(user.password).await?;
        submit_user(
            state,
            UserCommand::Create {
                username: user.username,
                name: user.name,
                email: user.email,
                password,
            },
        )
        .await
    })
    .await
}

pub async fn update_user(
    state: &AppState,
    username: String,
    changes: UserChanges,
) -> Result<UserRecord, ClientError> {
    operation("UpdateUser", None, async {
        let password = match changes.password {
            Some(password) => Some(hashed(password).await?),
            None => None,
        };
        submit_user(
            state,
            UserCommand::Update {
                username,
                name: changes.name,
                email: changes.email,
                password,
            },
        )
        .await
    })
    .await
}

pub async fn delete_user(state: &AppState, username: String) -> Result<(), ClientError> {
    operation("DeleteUser", None, async {
        submit_user(state, UserCommand::Delete { username })
            .await
            .map(drop)
    })
    .await
}

/// A user by username, from the history store.
pub async fn get_user(state: &AppState, username: &str) -> Result<HistoricUser, ClientError> {
    let by_name = Search {
        filter: vec![(
            UserField::Username,
            Condition::Eq(FieldValue::Text(username.to_owned())),
        )],
        sort: vec![SortBy {
            field: UserField::UserKey,
            descending: false,
        }],
        after: None,
        limit: 1,
        count_limit: 1,
    };
    let pages = search::<HistoricUser>(state, by_name).await?;
    pages
        .into_iter()
        .flat_map(|page| page.items)
        .next()
        .ok_or_else(|| {
            ClientError::not_found(format!("No user with the username '{username}' exists"))
        })
}

/// The replicated users as logins read them: a user with its hash, from the engine's
/// state of the deployment partition, or of any other partition when it has no leader
/// (every partition holds every user).
pub struct Directory(pub Weak<AppState>);

/// How long a login waits for the partitions to answer (partition 1 first, then the
/// others) before the configured users decide.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(3);

impl UserDirectory for Directory {
    fn lookup<'a>(
        &'a self,
        username: &'a str,
    ) -> BoxFuture<'a, Result<Option<UserRecord>, ClientError>> {
        Box::pin(async move {
            let Some(state) = self.0.upgrade() else {
                return Err(ClientError::Unavailable {
                    detail: "the gateway is shutting down".into(),
                });
            };
            // One bound for the whole lookup, however many partitions are asked.
            let deadline =
                tokio::time::Instant::now() + state.settings.request_timeout.min(LOOKUP_TIMEOUT);
            let mut last = None;
            for partition in 1..=state.dispatch.partition_count() {
                let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
                if remaining.is_zero() {
                    break;
                }
                let query = Query::UserCredentials {
                    username: username.to_owned(),
                };
                match state
                    .dispatch
                    .query(PartitionId(partition), query, remaining)
                    .await
                {
                    Ok(QueryResult::UserCredentials(user)) => return Ok(user),
                    Ok(_) => last = Some(ClientError::wrong_answer("user credentials")),
                    Err(error) => last = Some(error),
                }
            }
            Err(last.unwrap_or_else(|| ClientError::wrong_answer("user credentials")))
        })
    }
}

/// Creates the configured users that do not exist yet, retrying (with a growing pause,
/// up to 10 s) until each one is created or found to exist, or the gateway stops.
/// Every gateway does this at start: the deployment partition takes the first create of
/// a username and answers the others `ALREADY_EXISTS`, so brokers starting together and
/// restarts create each user once. A user that exists keeps its replicated password,
/// whatever the configuration says now (change it through `/v2/users`).
pub async fn seed(state: Weak<AppState>) {
    let mut pause = Duration::from_millis(200);
    loop {
        let Some(strong) = state.upgrade() else {
            return;
        };
        if *strong.shutdown.borrow() {
            return;
        }
        let seeds = strong.authenticator.unseeded_users();
        if seeds.is_empty() {
            return;
        }
        for seed in seeds {
            let command = UserCommand::Create {
                username: seed.username.clone(),
                name: seed.name,
                email: seed.email,
                password: seed.password,
            };
            let answer = strong
                .dispatch
                .submit(
                    DEPLOYMENT_PARTITION,
                    Command::User(command),
                    strong.settings.request_timeout,
                )
                .await;
            match answer {
                Ok(_) => {
                    tracing::info!(username = %seed.username, "configured user created");
                    strong.authenticator.user_seeded(&seed.username);
                }
                Err(ClientError::Rejected {
                    kind: RejectionType::AlreadyExists,
                    ..
                }) => {
                    tracing::debug!(username = %seed.username, "configured user exists already");
                    strong.authenticator.user_seeded(&seed.username);
                }
                Err(error) => {
                    tracing::debug!(username = %seed.username, %error, "configured user not created yet; retrying");
                }
            }
        }
        let mut shutdown = strong.shutdown.clone();
        drop(strong);
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            _ = shutdown.wait_for(|stopped| *stopped) => return,
        }
        pause = (pause * 2).min(Duration::from_secs(10));
    }
}

/// Attaches the replicated users to the state's authenticator and starts seeding the
/// configured ones (when on a runtime: tests that build a router without one skip it).
pub fn start_users(state: &Arc<AppState>) {
    state
        .authenticator
        .attach_users(Arc::new(Directory(Arc::downgrade(state))));
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(seed(Arc::downgrade(state)));
    }
}
