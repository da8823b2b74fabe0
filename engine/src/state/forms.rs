//! Deployed forms by key, by form id and version (the latest too), and by deployment.

use std::ops::ControlFlow;

use rill_protocol::Key;

use super::{AsKey, KeyBuf, Reader, Writer, keys, table};
use crate::error::{Result, inconsistent};

impl Reader<'_> {
    pub fn form(&self, key: impl AsKey) -> Result<Option<rill_protocol::value::FormRecord>> {
        self.get(KeyBuf::new(table::FORM).key(key))
    }

    /// The latest version of a form id and its key.
    pub fn latest_form(&self, form_id: &str) -> Result<Option<(i32, Key)>> {
        let latest: Option<(i32, i64)> = self.get(KeyBuf::new(table::FORM_LATEST).str(form_id))?;
        Ok(latest.map(|(version, key)| (version, Key(key))))
    }

    /// The key of the form of this id that a deployment deployed (or found unchanged).
    pub fn form_in_deployment(
        &self,
        deployment_key: impl AsKey,
        form_id: &str,
    ) -> Result<Option<Key>> {
        Ok(self
            .get_i64(
                KeyBuf::new(table::DEPLOYMENT_FORM)
                    .key(deployment_key)
                    .str(form_id),
            )?
            .map(Key))
    }

    /// Every version of a form id, oldest first.
    pub fn form_versions(&self, form_id: &str) -> Result<Vec<Key>> {
        let prefix = KeyBuf::new(table::FORM_VERSION).str(form_id);
        let mut out = Vec::new();
        self.scan(&prefix, |_, v| {
            out.push(Key(
                keys::decode_i64(v, 0).ok_or_else(|| inconsistent("bad form index"))?
            ));
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(out)
    }
}

impl Writer<'_> {
    pub fn put_form(&mut self, record: &rill_protocol::value::FormRecord) -> Result<()> {
        let key = record.form_key;
        self.put(KeyBuf::new(table::FORM).key(key), record)?;
        self.put_i64(
            KeyBuf::new(table::FORM_VERSION)
                .str(&record.form_id)
                .i32(record.version),
            key,
        );
        self.note_highest(table::FORM_HIGHEST, &record.form_id, record.version)?;
        let newer = match self.read().latest_form(&record.form_id)? {
            Some((version, _)) => record.version > version,
            None => true,
        };
        if newer {
            self.put(
                KeyBuf::new(table::FORM_LATEST).str(&record.form_id),
                &(record.version, key),
            )?;
        }
        Ok(())
    }

    /// Notes which form of an id a deployment deployed (or found unchanged).
    pub fn put_deployment_form(
        &mut self,
        deployment_key: impl AsKey,
        form_id: &str,
        form_key: i64,
    ) {
        self.put_i64(
            KeyBuf::new(table::DEPLOYMENT_FORM)
                .key(deployment_key)
                .str(form_id),
            form_key,
        );
    }
}
