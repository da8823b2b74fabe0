//! `bpmn:serviceTask` and `bpmn:sendTask`: a job for a worker (a send task too, as in
//! Zeebe), from `zeebe:taskDefinition` and `zeebe:taskHeaders`; a service task's job
//! also gets the deployed resources its `zeebe:linkedResources` link.

use roxmltree::Node;

use super::{ElementParser, FlowNode};
use crate::model::{CalledBinding, ElementKind, LinkedResource};
use crate::parse::document::ZEEBE_NS;
use crate::parse::process::Builder;

pub(super) struct ServiceTask;

impl ElementParser for ServiceTask {
    fn parse<'a, 'input>(
        &self,
        b: &mut Builder<'_, 'a, 'input>,
        at: &FlowNode<'a, 'input>,
    ) -> ElementKind {
        let missing = "a service task needs a job type; add zeebe:taskDefinition with a type";
        let mut job = b.job(at.id, at.node, &at.extensions, Some(missing));
        if let Some(links) = at.extensions.linked_resources {
            job.linked_resources = b.linked_resources(at.id, links);
        }
        ElementKind::ServiceTask(job)
    }

    fn is_activity(&self) -> bool {
        true
    }
}

pub(super) struct SendTask;

impl ElementParser for SendTask {
    fn parse<'a, 'input>(
        &self,
        b: &mut Builder<'_, 'a, 'input>,
        at: &FlowNode<'a, 'input>,
    ) -> ElementKind {
        let missing = "a send task needs a job type; add zeebe:taskDefinition with a type (as \
                       in Zeebe, a send task is a job for a worker that sends the message)";
        ElementKind::SendTask(b.job(at.id, at.node, &at.extensions, Some(missing)))
    }

    fn is_activity(&self) -> bool {
        true
    }
}

impl<'a, 'input> Builder<'_, 'a, 'input> {
    /// The `zeebe:linkedResource`s of a `zeebe:linkedResources`, in document order. As in
    /// Zeebe, each needs a `resourceId` and a `resourceType`; `bindingType` is `latest`
    /// (the default), `deployment` or `versionTag` (with a `versionTag`).
    fn linked_resources(&mut self, id: &str, links: Node<'a, 'input>) -> Vec<LinkedResource> {
        let mut read = Vec::new();
        for link in links.children().filter(|n| n.is_element()) {
            if link.tag_name().namespace() != Some(ZEEBE_NS)
                || link.tag_name().name() != "linkedResource"
            {
                self.problem(
                    Some(id),
                    link,
                    format!(
                        "zeebe:linkedResources holds only zeebe:linkedResource elements, not \
                         '{}'; remove it",
                        link.tag_name().name()
                    ),
                );
                continue;
            }
            let attribute = |name: &str| {
                link.attribute(name)
                    .map(str::trim)
                    .filter(|value| !value.is_empty())
            };
            let (Some(resource_id), Some(resource_type)) =
                (attribute("resourceId"), attribute("resourceType"))
            else {
                self.problem(
                    Some(id),
                    link,
                    "a zeebe:linkedResource needs a resourceId (the id of the deployed \
                     resource) and a resourceType (e.g. RPA), as in Zeebe"
                        .to_owned(),
                );
                continue;
            };
            let binding = match attribute("bindingType") {
                None | Some("latest") => CalledBinding::Latest,
                Some("deployment") => CalledBinding::Deployment,
                Some("versionTag") => match attribute("versionTag") {
                    Some(tag) => CalledBinding::VersionTag(tag.to_owned()),
                    None => {
                        self.problem(
                            Some(id),
                            link,
                            format!(
                                "the zeebe:linkedResource '{resource_id}' has bindingType \
                                 versionTag but no versionTag; set the version tag of the \
                                 resource to link"
                            ),
                        );
                        continue;
                    }
                },
                Some(other) => {
                    self.problem(
                        Some(id),
                        link,
                        format!(
                            "the zeebe:linkedResource '{resource_id}' has bindingType \
                             '{other}'; use latest, deployment or versionTag"
                        ),
                    );
                    continue;
                }
            };
            read.push(LinkedResource {
                resource_id: resource_id.to_owned(),
                resource_type: resource_type.to_owned(),
                link_name: attribute("linkName").unwrap_or_default().to_owned(),
                binding,
            });
        }
        read
    }
}
