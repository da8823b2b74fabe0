//! Variables, by process instance, scope and name.

use std::ops::ControlFlow;

use super::{AsKey, KeyBuf, Reader, StoredVariable, Writer, decode, keys, table};
use crate::error::{Result, inconsistent};

fn variable_key(instance: impl AsKey, scope: impl AsKey, name: &str) -> KeyBuf {
    KeyBuf::new(table::VARIABLE)
        .key(instance)
        .key(scope)
        .str(name)
}

impl Reader<'_> {
    pub fn variable(
        &self,
        instance: impl AsKey,
        scope: impl AsKey,
        name: &str,
    ) -> Result<Option<StoredVariable>> {
        self.get(variable_key(instance, scope, name))
    }

    /// The variables of one scope, by name.
    pub fn scope_variables(
        &self,
        instance: impl AsKey,
        scope: impl AsKey,
    ) -> Result<Vec<(String, StoredVariable)>> {
        let prefix = KeyBuf::new(table::VARIABLE).key(instance).key(scope);
        let at = prefix.bytes().len();
        let mut out = Vec::new();
        self.scan(&prefix, |k, v| {
            let (name, _) =
                keys::decode_str(k, at).ok_or_else(|| inconsistent("bad variable key"))?;
            out.push((name.to_owned(), decode(v)?));
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(out)
    }
}

impl Writer<'_> {
    pub fn put_variable(
        &mut self,
        instance: impl AsKey,
        scope: impl AsKey,
        name: &str,
        variable: &StoredVariable,
    ) -> Result<()> {
        self.put(variable_key(instance, scope, name), variable)
    }

    pub fn delete_scope_variables(
        &mut self,
        instance: impl AsKey,
        scope: impl AsKey,
    ) -> Result<()> {
        self.delete_prefix(KeyBuf::new(table::VARIABLE).key(instance).key(scope))
    }
}
