//! Input and output mappings (`zeebe:ioMapping`).

use roxmltree::Node;

use super::document::ZEEBE_NS;
use super::process::Builder;
use super::values;
use crate::model::Mapping;

impl<'a, 'input> Builder<'_, 'a, 'input> {
    /// The input and output mappings of `zeebe:ioMapping`; those of a kind the element
    /// refuses are reported with the reason (`inputs_refused`, `outputs_refused`).
    pub(in crate::parse) fn io_mapping(
        &mut self,
        id: &str,
        io_mapping: Option<Node<'a, 'input>>,
        inputs_refused: Option<&str>,
        outputs_refused: Option<&str>,
    ) -> (Vec<Mapping>, Vec<Mapping>) {
        let (mut inputs, mut outputs) = (Vec::new(), Vec::new());
        let Some(io_mapping) = io_mapping else {
            return (inputs, outputs);
        };
        for mapping in io_mapping.children().filter(|n| n.is_element()) {
            let name = mapping.tag_name().name();
            let is_zeebe = mapping.tag_name().namespace() == Some(ZEEBE_NS);
            let into = match name {
                "input" if is_zeebe => match inputs_refused {
                    Some(reason) => {
                        self.problem(Some(id), mapping, reason.to_owned());
                        continue;
                    }
                    None => &mut inputs,
                },
                "output" if is_zeebe => match outputs_refused {
                    Some(reason) => {
                        self.problem(Some(id), mapping, reason.to_owned());
                        continue;
                    }
                    None => &mut outputs,
                },
                _ => {
                    self.problem(
                        Some(id),
                        mapping,
                        format!("'{name}' is not expected in zeebe:ioMapping (only zeebe:input and zeebe:output)"),
                    );
                    continue;
                }
            };
            let source = match mapping.attribute("source") {
                None => values::expression("mapping source", "null"),
                Some(raw) if raw.trim().is_empty() => values::expression("mapping source", "null"),
                Some(raw) => match raw.trim().strip_prefix('=') {
                    Some(source) => {
                        values::expression(&format!("mapping source '{}'", raw.trim()), source)
                    }
                    // A static input source is a string constant, as in Zeebe (connector
                    // templates write `source="noAuth"`): the text as written, even when
                    // it looks like a number or a boolean.
                    None if name == "input" => Ok(rill_feel::Expression::string_literal(raw)),
                    None => Err(format!(
                        "the output mapping source '{raw}' must be a FEEL expression starting \
                         with '=' (e.g. '={raw}'); only an input mapping can have a static value"
                    )),
                },
            };
            let target = values::target_path(mapping.attribute("target").unwrap_or(""));
            match (source, target) {
                (Ok(source), Ok(target)) => into.push(Mapping { source, target }),
                (source, target) => {
                    for message in [source.err(), target.err()].into_iter().flatten() {
                        self.problem(Some(id), mapping, message);
                    }
                }
            }
        }
        (inputs, outputs)
    }
}
