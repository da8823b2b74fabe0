//! Users of basic authentication, by username and by key, each with its password hash
//! (kept here and in the commands that carry it, never in a record written).

use rill_protocol::value::UserRecord;

use super::{AsKey, KeyBuf, Reader, Writer, table};
use crate::error::Result;

impl Reader<'_> {
    pub fn user(&self, username: &str) -> Result<Option<UserRecord>> {
        self.get(KeyBuf::new(table::USER).str(username))
    }

    pub fn user_by_key(&self, key: impl AsKey) -> Result<Option<UserRecord>> {
        let username: Option<String> = self.get(KeyBuf::new(table::USER_BY_KEY).key(key))?;
        match username {
            Some(username) => self.user(&username),
            None => Ok(None),
        }
    }
}

impl Writer<'_> {
    pub fn put_user(&mut self, user: &UserRecord) -> Result<()> {
        self.put(KeyBuf::new(table::USER).str(&user.username), user)?;
        self.put(
            KeyBuf::new(table::USER_BY_KEY).key(user.user_key),
            &user.username,
        )
    }

    pub fn delete_user(&mut self, user: &UserRecord) {
        self.delete(KeyBuf::new(table::USER).str(&user.username));
        self.delete(KeyBuf::new(table::USER_BY_KEY).key(user.user_key));
    }
}
