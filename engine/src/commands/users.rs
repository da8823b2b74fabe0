//! USER: users of basic authentication (Camunda's `/v2/users`), made on the deployment
//! partition and distributed to every other partition like deployments, so that a
//! gateway can verify credentials against any of them.
//!
//! ```text
//! CREATE ─► taken? ALREADY_EXISTS : CREATED (new user key) ─► DISTRIBUTING per partition
//! UPDATE ─► unknown? NOT_FOUND    : UPDATED (what changed, the rest kept) ─► DISTRIBUTING
//! DELETE ─► unknown? NOT_FOUND    : DISTRIBUTING (the user goes with it) ─► DELETED
//! ```
//!
//! The password arrives hashed (the gateway picked the salt): nothing here is random.
//! The hash is in the events' drafts, for the appliers, and in the distributed
//! commands; the command record, the response and every written record go without it.

use rill_protocol::value::{PasswordHash, UserRecord};
use rill_protocol::{Intent, Key, PartitionId, UserCommand, ValueType};

use super::distribute;
use crate::context::Processing;
use crate::error::Result;
use crate::outcome::Rejection;

/// Users are made on the deployment partition, which hands them on.
const USER_PARTITION: PartitionId = PartitionId(1);

/// The value of a command's record before anything is known of the user.
pub(super) fn placeholder(command: &UserCommand) -> UserRecord {
    UserRecord {
        user_key: -1,
        username: command.username().to_owned(),
        name: String::new(),
        email: String::new(),
        password: PasswordHash::default(),
    }
}

/// The user as records and answers show it: without the hash.
fn shown(user: &UserRecord) -> UserRecord {
    UserRecord {
        password: PasswordHash::default(),
        ..user.clone()
    }
}

pub(super) fn process(p: &mut Processing<'_>, command: &UserCommand) -> Result<()> {
    let intent = command.intent();
    if let Some(rejection) = invalid(p, command) {
        p.reject(Key::NONE, intent, placeholder(command), rejection);
        return Ok(());
    }
    match command {
        UserCommand::Create {
            username,
            name,
            email,
            password,
        } => {
            if p.read().user(username)?.is_some() {
                let rejection = Rejection::already_exists(format!(
                    "Expected to create a user with the username '{username}', but a user \
                     with this username already exists"
                ));
                p.reject(Key::NONE, intent, placeholder(command), rejection);
                return Ok(());
            }
            let key = p.next_key()?;
            let user = UserRecord {
                user_key: key.get(),
                username: username.clone(),
                name: name.clone(),
                email: email.clone(),
                password: password.clone(),
            };
            p.command(Key::NONE, intent, shown(&user));
            p.event(key, Intent::Created, user.clone())?;
            distribute(p, key, ValueType::User, Intent::Create)?;
            p.respond(key, Intent::Created, shown(&user));
        }
        UserCommand::Update {
            username,
            name,
            email,
            password,
        } => {
            let Some(mut user) = p.read().user(username)? else {
                p.reject(
                    Key::NONE,
                    intent,
                    placeholder(command),
                    unknown(username, "update"),
                );
                return Ok(());
            };
            let key = Key(user.user_key);
            if let Some(name) = name {
                user.name = name.clone();
            }
            if let Some(email) = email {
                user.email = email.clone();
            }
            if let Some(password) = password {
                user.password = password.clone();
            }
            p.command(key, intent, shown(&user));
            p.event(key, Intent::Updated, user.clone())?;
            distribute(p, key, ValueType::User, Intent::Update)?;
            p.respond(key, Intent::Updated, shown(&user));
        }
        UserCommand::Delete { username } => {
            let Some(user) = p.read().user(username)? else {
                p.reject(
                    Key::NONE,
                    intent,
                    placeholder(command),
                    unknown(username, "delete"),
                );
                return Ok(());
            };
            let key = Key(user.user_key);
            p.command(key, intent, shown(&user));
            // Queued while the user is still in state: the distribution carries it.
            distribute(p, key, ValueType::User, Intent::Delete)?;
            p.event(key, Intent::Deleted, user.clone())?;
            p.respond(key, Intent::Deleted, shown(&user));
        }
    }
    Ok(())
}

/// What no state can make right: a command on the wrong partition, an empty username,
/// a user created without a password. (The gateway checks the rest of the input.)
fn invalid(p: &Processing<'_>, command: &UserCommand) -> Option<Rejection> {
    if p.ctx.partition_id != USER_PARTITION {
        return Some(Rejection::invalid_argument(format!(
            "Expected user commands on partition {}, which distributes users, but this is \
             partition {}",
            USER_PARTITION.get(),
            p.ctx.partition_id.get()
        )));
    }
    if command.username().is_empty() {
        return Some(Rejection::invalid_argument(
            "Expected a username, but it was empty",
        ));
    }
    let empty_password = match command {
        UserCommand::Create { password, .. } => password.is_empty(),
        UserCommand::Update {
            password: Some(password),
            ..
        } => password.is_empty(),
        _ => false,
    };
    empty_password.then(|| {
        Rejection::invalid_argument(format!(
            "Expected a password hash for user '{}', but it was empty",
            command.username()
        ))
    })
}

fn unknown(username: &str, what: &str) -> Rejection {
    Rejection::not_found(format!(
        "Expected to {what} the user with the username '{username}', but no such user exists"
    ))
}

/// A user change made on the deployment partition, applied here: the same user, key
/// and hash. Distributions arrive in order, so this partition follows partition 1.
pub(super) fn apply_distributed(
    p: &mut Processing<'_>,
    intent: Intent,
    user: &UserRecord,
) -> Result<()> {
    let key = Key(user.user_key);
    match intent {
        Intent::Create | Intent::Update => {
            let event = if p.read().user(&user.username)?.is_some() {
                Intent::Updated
            } else {
                Intent::Created
            };
            p.event(key, event, user.clone())
        }
        Intent::Delete => match p.read().user(&user.username)? {
            Some(kept) => p.event(Key(kept.user_key), Intent::Deleted, kept),
            None => Ok(()),
        },
        _ => Ok(()),
    }
}
