//! The clients awaiting an instance's result (create-and-await).

use super::{AsKey, AwaitRegistration, KeyBuf, Reader, Writer, table};
use crate::error::Result;

impl Reader<'_> {
    pub fn await_registration(
        &self,
        process_instance_key: impl AsKey,
    ) -> Result<Option<AwaitRegistration>> {
        self.get(KeyBuf::new(table::AWAIT_RESULT).key(process_instance_key))
    }
}

impl Writer<'_> {
    pub fn put_await_registration(
        &mut self,
        process_instance_key: impl AsKey,
        registration: &AwaitRegistration,
    ) -> Result<()> {
        self.put(
            KeyBuf::new(table::AWAIT_RESULT).key(process_instance_key),
            registration,
        )
    }

    pub fn delete_await_registration(&mut self, process_instance_key: impl AsKey) {
        self.delete(KeyBuf::new(table::AWAIT_RESULT).key(process_instance_key));
    }
}
