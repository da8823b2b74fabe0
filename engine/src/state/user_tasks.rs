//! Camunda user tasks by key.

use super::{AsKey, KeyBuf, Reader, StoredUserTask, Writer, table};
use crate::error::Result;

impl Reader<'_> {
    pub fn user_task(&self, key: impl AsKey) -> Result<Option<StoredUserTask>> {
        self.get(KeyBuf::new(table::USER_TASK).key(key))
    }
}

impl Writer<'_> {
    pub fn put_user_task(&mut self, key: impl AsKey, task: &StoredUserTask) -> Result<()> {
        self.put(KeyBuf::new(table::USER_TASK).key(key), task)
    }

    pub fn delete_user_task(&mut self, key: impl AsKey) {
        self.delete(KeyBuf::new(table::USER_TASK).key(key));
    }
}
