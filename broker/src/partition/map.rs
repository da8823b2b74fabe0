//! The partitions a broker hosts, shared by everything that serves them (the command
//! API, the health probes, the routers, the jobs feed) and changed at run time: a
//! cluster change starts a replica here or stops one (docs/decisions/cluster-scaling.md).
//! Whoever serves a request looks the partition up at that moment, so a partition joined
//! after start is served like one the broker started with, and one it left is not.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::RwLock;
use rill_engine_api::Engine;
use rill_protocol::PartitionId;
use tokio::sync::broadcast;

use super::Partition;
use crate::delivery::PartitionRouter;

struct Inner<E: Engine> {
    partitions: RwLock<BTreeMap<PartitionId, Partition<E>>>,
    /// Where the hosted partitions deliver cross-partition commands; given to every
    /// partition added later too.
    router: RwLock<Option<Arc<dyn PartitionRouter<E>>>>,
    /// Tells who follows each partition's notifications (the jobs feed) of partitions
    /// added later.
    added: broadcast::Sender<Partition<E>>,
}

/// The partitions hosted here, by id. Cheap to clone; every clone is the same map.
pub struct PartitionMap<E: Engine> {
    inner: Arc<Inner<E>>,
}

impl<E: Engine> Clone for PartitionMap<E> {
    fn clone(&self) -> Self {
        PartitionMap {
            inner: self.inner.clone(),
        }
    }
}

impl<E: Engine> Default for PartitionMap<E> {
    fn default() -> Self {
        PartitionMap::new(BTreeMap::new())
    }
}

impl<E: Engine> PartitionMap<E> {
    pub fn new(partitions: BTreeMap<PartitionId, Partition<E>>) -> PartitionMap<E> {
        PartitionMap {
            inner: Arc::new(Inner {
                partitions: RwLock::new(partitions),
                router: RwLock::new(None),
                added: broadcast::channel(64).0,
            }),
        }
    }

    pub fn get(&self, id: &PartitionId) -> Option<Partition<E>> {
        self.inner.partitions.read().get(id).cloned()
    }

    pub fn contains_key(&self, id: &PartitionId) -> bool {
        self.inner.partitions.read().contains_key(id)
    }

    /// The partitions hosted now, in id order.
    pub fn values(&self) -> Vec<Partition<E>> {
        self.inner.partitions.read().values().cloned().collect()
    }

    /// The ids of the partitions hosted now.
    pub fn keys(&self) -> Vec<PartitionId> {
        self.inner.partitions.read().keys().copied().collect()
    }

    pub fn len(&self) -> usize {
        self.inner.partitions.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.inner.partitions.read().is_empty()
    }

    /// A copy of the map as it is now.
    pub fn snapshot(&self) -> BTreeMap<PartitionId, Partition<E>> {
        self.inner.partitions.read().clone()
    }

    /// Hosts `partition` from now on: it gets the router, and the followers hear of it.
    pub fn insert(&self, partition: Partition<E>) {
        if let Some(router) = self.inner.router.read().clone() {
            partition.set_router(router);
        }
        self.inner
            .partitions
            .write()
            .insert(partition.id(), partition.clone());
        let _ = self.inner.added.send(partition);
    }

    /// Stops hosting `id` (the caller stops the partition).
    pub fn remove(&self, id: &PartitionId) -> Option<Partition<E>> {
        self.inner.partitions.write().remove(id)
    }

    /// Delivers the cross-partition commands of every partition hosted now or later
    /// through `router`.
    pub fn set_router(&self, router: Arc<dyn PartitionRouter<E>>) {
        *self.inner.router.write() = Some(router.clone());
        for partition in self.values() {
            partition.set_router(router.clone());
        }
    }

    /// Partitions inserted from now on.
    pub fn subscribe_added(&self) -> broadcast::Receiver<Partition<E>> {
        self.inner.added.subscribe()
    }
}
