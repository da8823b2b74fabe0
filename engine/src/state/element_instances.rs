//! Element instances by key, the children of each scope, the tokens waiting at joins,
//! and the counters and outputs of multi-instance bodies.

use std::ops::ControlFlow;

use super::{
    AsKey, ElementInstance, KeyBuf, MultiInstanceCounts, Reader, Writer, decode, keys, table,
};
use crate::error::{Result, inconsistent};

impl Reader<'_> {
    pub fn element_instance(&self, key: impl AsKey) -> Result<Option<ElementInstance>> {
        let load = || self.get(KeyBuf::new(table::ELEMENT_INSTANCE).key(key));
        match self.cache {
            Some(cache) => cache.get(key.as_key().get(), load),
            None => load(),
        }
    }

    /// Looks at a live element instance without copying it.
    pub fn peek_element_instance<R>(
        &self,
        key: impl AsKey,
        look: impl FnOnce(&ElementInstance) -> R,
    ) -> Result<Option<R>> {
        let load = || self.get(KeyBuf::new(table::ELEMENT_INSTANCE).key(key));
        match self.cache {
            Some(cache) => cache.peek(key.as_key().get(), load, look),
            None => Ok(load()?.as_ref().map(look)),
        }
    }

    /// Keys of the live child element instances of a scope, in creation order.
    pub fn children(&self, scope_key: impl AsKey) -> Result<Vec<i64>> {
        let prefix = KeyBuf::new(table::ELEMENT_CHILD).key(scope_key);
        let mut children = self.trailing_keys(&prefix, usize::MAX)?;
        if let Some(cache) = self.cache {
            cache.merge_children(scope_key.as_key().get(), &mut children);
        }
        Ok(children)
    }

    /// Tokens waiting at a parallel join: `(incoming flow id, count)`.
    pub fn join_tokens(
        &self,
        scope_key: impl AsKey,
        gateway_id: &str,
    ) -> Result<Vec<(String, u32)>> {
        let prefix = KeyBuf::new(table::JOIN_TOKEN)
            .key(scope_key)
            .str(gateway_id);
        let at = prefix.bytes().len();
        let mut out = Vec::new();
        self.scan(&prefix, |k, v| {
            let (flow, _) =
                keys::decode_str(k, at).ok_or_else(|| inconsistent("bad join token key"))?;
            out.push((flow.to_owned(), decode(v)?));
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(out)
    }

    /// The gateways of a scope where tokens wait (parallel and inclusive joins), each
    /// once, in key order.
    pub fn gateways_with_tokens(&self, scope_key: impl AsKey) -> Result<Vec<String>> {
        let prefix = KeyBuf::new(table::JOIN_TOKEN).key(scope_key);
        let at = prefix.bytes().len();
        let mut out: Vec<String> = Vec::new();
        self.scan(&prefix, |k, _| {
            let (gateway, _) =
                keys::decode_str(k, at).ok_or_else(|| inconsistent("bad join token key"))?;
            if out.last().map(String::as_str) != Some(gateway) {
                out.push(gateway.to_owned());
            }
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(out)
    }

    /// How many inner instances of a multi-instance body were created and completed.
    pub fn multi_instance_counts(&self, body_key: impl AsKey) -> Result<MultiInstanceCounts> {
        Ok(self
            .get(KeyBuf::new(table::MULTI_INSTANCE_BODY).key(body_key))?
            .unwrap_or_default())
    }

    /// The loop counter of a multi-instance inner instance (from 1).
    pub fn loop_counter(&self, inner_key: impl AsKey) -> Result<Option<u32>> {
        self.get(KeyBuf::new(table::LOOP_COUNTER).key(inner_key))
    }

    /// The output elements collected by a multi-instance body: `(loop counter, JSON
    /// text)`, in loop-counter order.
    pub fn multi_instance_outputs(&self, body_key: impl AsKey) -> Result<Vec<(u32, String)>> {
        let prefix = KeyBuf::new(table::MULTI_INSTANCE_OUTPUT).key(body_key);
        let at = prefix.bytes().len();
        let mut out = Vec::new();
        self.scan(&prefix, |k, v| {
            let counter = keys::decode_i64(k, at).ok_or_else(|| inconsistent("bad output key"))?;
            out.push((u32::try_from(counter).unwrap_or(u32::MAX), decode(v)?));
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(out)
    }
}

impl Writer<'_> {
    pub fn insert_element_instance(&mut self, instance: ElementInstance) {
        self.cache.insert(instance);
    }

    /// Changes a live element instance in place; false if there is none.
    pub fn update_element_instance(
        &mut self,
        key: impl AsKey,
        change: impl FnOnce(&mut ElementInstance),
    ) -> Result<bool> {
        let raw: &dyn rill_engine_api::StateRead = &*self.raw;
        let load = || Reader::new(raw).get(KeyBuf::new(table::ELEMENT_INSTANCE).key(key));
        self.cache.update(key.as_key().get(), load, change)
    }

    pub fn delete_element_instance(&mut self, key: impl AsKey) {
        self.cache.delete(key.as_key().get());
    }

    pub fn add_child(&mut self, scope_key: impl AsKey, child_key: impl AsKey) {
        self.cache
            .set_child(scope_key.as_key().get(), child_key.as_key().get(), true);
    }

    pub fn remove_child(&mut self, scope_key: impl AsKey, child_key: impl AsKey) {
        self.cache
            .set_child(scope_key.as_key().get(), child_key.as_key().get(), false);
    }

    pub fn set_join_tokens(
        &mut self,
        scope_key: impl AsKey,
        gateway_id: &str,
        flow_id: &str,
        count: u32,
    ) -> Result<()> {
        let key = KeyBuf::new(table::JOIN_TOKEN)
            .key(scope_key)
            .str(gateway_id)
            .str(flow_id);
        if count == 0 {
            self.delete(key);
            Ok(())
        } else {
            self.put(key, &count)
        }
    }

    pub fn join_token_count(
        &self,
        scope_key: impl AsKey,
        gateway_id: &str,
        flow_id: &str,
    ) -> Result<u32> {
        let key = KeyBuf::new(table::JOIN_TOKEN)
            .key(scope_key)
            .str(gateway_id)
            .str(flow_id);
        Ok(self.read().get(key)?.unwrap_or(0))
    }

    pub fn delete_join_tokens(&mut self, scope_key: impl AsKey) -> Result<()> {
        self.delete_prefix(KeyBuf::new(table::JOIN_TOKEN).key(scope_key))
    }

    pub fn put_multi_instance_counts(
        &mut self,
        body_key: impl AsKey,
        counts: &MultiInstanceCounts,
    ) -> Result<()> {
        self.put(
            KeyBuf::new(table::MULTI_INSTANCE_BODY).key(body_key),
            counts,
        )
    }

    pub fn put_loop_counter(&mut self, inner_key: impl AsKey, counter: u32) -> Result<()> {
        self.put(KeyBuf::new(table::LOOP_COUNTER).key(inner_key), &counter)
    }

    pub fn delete_loop_counter(&mut self, inner_key: impl AsKey) {
        self.delete(KeyBuf::new(table::LOOP_COUNTER).key(inner_key));
    }

    pub fn put_multi_instance_output(
        &mut self,
        body_key: impl AsKey,
        counter: u32,
        json: &String,
    ) -> Result<()> {
        self.put(
            KeyBuf::new(table::MULTI_INSTANCE_OUTPUT)
                .key(body_key)
                .i64(i64::from(counter)),
            json,
        )
    }

    /// Removes what a multi-instance body kept (its counts and collected outputs).
    pub fn delete_multi_instance(&mut self, body_key: impl AsKey) -> Result<()> {
        self.delete(KeyBuf::new(table::MULTI_INSTANCE_BODY).key(body_key));
        self.delete_prefix(KeyBuf::new(table::MULTI_INSTANCE_OUTPUT).key(body_key))
    }
}
