//! Deployed resources that are not processes, decisions or forms (RPA scripts): by
//! key, by resource id and version (the latest too), and by deployment. Service tasks
//! link them with `zeebe:linkedResource`.

use std::ops::ControlFlow;

use rill_protocol::Key;
use rill_protocol::value::ResourceRecord;

use super::{AsKey, KeyBuf, Reader, Writer, keys, table};
use crate::error::{Result, inconsistent};

impl Reader<'_> {
    pub fn resource(&self, key: impl AsKey) -> Result<Option<ResourceRecord>> {
        self.get(KeyBuf::new(table::RESOURCE).key(key))
    }

    /// The latest version of a resource id and its key.
    pub fn latest_resource(&self, resource_id: &str) -> Result<Option<(i32, Key)>> {
        let latest: Option<(i32, i64)> =
            self.get(KeyBuf::new(table::RESOURCE_LATEST).str(resource_id))?;
        Ok(latest.map(|(version, key)| (version, Key(key))))
    }

    /// The key of the resource of this id that a deployment deployed (or found
    /// unchanged).
    pub fn resource_in_deployment(
        &self,
        deployment_key: impl AsKey,
        resource_id: &str,
    ) -> Result<Option<Key>> {
        Ok(self
            .get_i64(
                KeyBuf::new(table::DEPLOYMENT_RESOURCE)
                    .key(deployment_key)
                    .str(resource_id),
            )?
            .map(Key))
    }

    /// The newest version of a resource id whose version tag is `tag`.
    pub fn resource_with_version_tag(&self, resource_id: &str, tag: &str) -> Result<Option<Key>> {
        let prefix = KeyBuf::new(table::RESOURCE_VERSION).str(resource_id);
        let mut versions = Vec::new();
        self.scan(&prefix, |_, v| {
            versions.push(Key(
                keys::decode_i64(v, 0).ok_or_else(|| inconsistent("bad resource index"))?
            ));
            Ok(ControlFlow::Continue(()))
        })?;
        for key in versions.into_iter().rev() {
            if self
                .resource(key)?
                .is_some_and(|resource| resource.version_tag == tag)
            {
                return Ok(Some(key));
            }
        }
        Ok(None)
    }
}

impl Writer<'_> {
    /// A new version of a resource (RESOURCE CREATED).
    pub fn put_resource(&mut self, record: &ResourceRecord) -> Result<()> {
        let key = record.resource_key;
        self.put(KeyBuf::new(table::RESOURCE).key(key), record)?;
        self.put_i64(
            KeyBuf::new(table::RESOURCE_VERSION)
                .str(&record.resource_id)
                .i32(record.version),
            key,
        );
        let newer = match self.read().latest_resource(&record.resource_id)? {
            Some((version, _)) => record.version > version,
            None => true,
        };
        if newer {
            self.put(
                KeyBuf::new(table::RESOURCE_LATEST).str(&record.resource_id),
                &(record.version, key),
            )?;
        }
        Ok(())
    }

    /// Notes which resource of an id a deployment deployed (or found unchanged).
    pub fn put_deployment_resource(
        &mut self,
        deployment_key: impl AsKey,
        resource_id: &str,
        resource_key: i64,
    ) {
        self.put_i64(
            KeyBuf::new(table::DEPLOYMENT_RESOURCE)
                .key(deployment_key)
                .str(resource_id),
            resource_key,
        );
    }
}
