//! The spec's names of OFPT_ERROR types and codes, for messages like
//! `OFPET_BAD_MATCH/OFPBMC_BAD_PREREQ (type=4, code=9)`.

use ofp::OfpError;

/// `FooBar` -> `FOO_BAR`.
fn screaming_snake(camel: &str) -> String {
    let mut out = String::with_capacity(camel.len() + 4);
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

/// The `OFPET_*` type name and the code prefix of each error type.
fn type_names(error: &OfpError) -> (&'static str, &'static str) {
    match error {
        OfpError::HelloFailed(_) => ("OFPET_HELLO_FAILED", "OFPHFC_"),
        OfpError::BadRequest(_) => ("OFPET_BAD_REQUEST", "OFPBRC_"),
        OfpError::BadAction(_) => ("OFPET_BAD_ACTION", "OFPBAC_"),
        OfpError::BadInstruction(_) => ("OFPET_BAD_INSTRUCTION", "OFPBIC_"),
        OfpError::BadMatch(_) => ("OFPET_BAD_MATCH", "OFPBMC_"),
        OfpError::FlowModFailed(_) => ("OFPET_FLOW_MOD_FAILED", "OFPFMFC_"),
        OfpError::GroupModFailed(_) => ("OFPET_GROUP_MOD_FAILED", "OFPGMFC_"),
        OfpError::PortModFailed(_) => ("OFPET_PORT_MOD_FAILED", "OFPPMFC_"),
        OfpError::TableModFailed(_) => ("OFPET_TABLE_MOD_FAILED", "OFPTMFC_"),
        OfpError::QueueOpFailed(_) => ("OFPET_QUEUE_OP_FAILED", "OFPQOFC_"),
        OfpError::SwitchConfigFailed(_) => ("OFPET_SWITCH_CONFIG_FAILED", "OFPSCFC_"),
        OfpError::RoleRequestFailed(_) => ("OFPET_ROLE_REQUEST_FAILED", "OFPRRFC_"),
        OfpError::MeterModFailed(_) => ("OFPET_METER_MOD_FAILED", "OFPMMFC_"),
        OfpError::TableFeaturesFailed(_) => ("OFPET_TABLE_FEATURES_FAILED", "OFPTFFC_"),
        OfpError::Experimenter { .. } => ("OFPET_EXPERIMENTER", ""),
        OfpError::Unknown { .. } => ("", ""),
    }
}

/// The code's variant name as the derived `Debug` prints it (`BadPrereq`).
fn code_variant(error: &OfpError) -> String {
    let debug = format!("{error:?}");
    debug
        .split_once('(')
        .map(|(_, inner)| inner.trim_end_matches(')').to_string())
        .unwrap_or_default()
}

/// `OFPET_X/OFPXXC_Y (type=T, code=C)`.
pub fn describe_error(error: &OfpError) -> String {
    let (t, c) = error.type_code();
    let name = match error {
        OfpError::Experimenter { experimenter, .. } => {
            format!("OFPET_EXPERIMENTER/experimenter={experimenter:#x}")
        }
        OfpError::Unknown { .. } => "unknown error".to_string(),
        known => {
            let (type_name, prefix) = type_names(known);
            format!(
                "{type_name}/{prefix}{}",
                screaming_snake(&code_variant(known))
            )
        }
    };
    format!("{name} (type={t}, code={c})")
}

#[cfg(test)]
mod tests {
    use super::*;
    use ofp::{
        BadActionCode, BadInstructionCode, BadMatchCode, BadRequestCode, FlowModFailedCode,
        GroupModFailedCode, HelloFailedCode, MeterModFailedCode, PortModFailedCode,
        QueueOpFailedCode, RoleRequestFailedCode, SwitchConfigFailedCode, TableFeaturesFailedCode,
        TableModFailedCode,
    };

    #[test]
    fn names_follow_the_spec() {
        let cases = [
            (
                OfpError::BadMatch(BadMatchCode::BadPrereq),
                "OFPET_BAD_MATCH/OFPBMC_BAD_PREREQ (type=4, code=9)",
            ),
            (
                OfpError::BadRequest(BadRequestCode::MultipartBufferOverflow),
                "OFPET_BAD_REQUEST/OFPBRC_MULTIPART_BUFFER_OVERFLOW (type=1, code=13)",
            ),
            (
                OfpError::BadMatch(BadMatchCode::BadDlAddrMask),
                "OFPET_BAD_MATCH/OFPBMC_BAD_DL_ADDR_MASK (type=4, code=3)",
            ),
            (
                OfpError::GroupModFailed(GroupModFailedCode::UnknownGroup),
                "OFPET_GROUP_MOD_FAILED/OFPGMFC_UNKNOWN_GROUP (type=6, code=8)",
            ),
            (
                OfpError::MeterModFailed(MeterModFailedCode::MeterExists),
                "OFPET_METER_MOD_FAILED/OFPMMFC_METER_EXISTS (type=12, code=1)",
            ),
            (
                OfpError::BadInstruction(BadInstructionCode::UnsupMetadataMask),
                "OFPET_BAD_INSTRUCTION/OFPBIC_UNSUP_METADATA_MASK (type=3, code=4)",
            ),
            (
                OfpError::Experimenter {
                    exp_type: 11,
                    experimenter: 0xbebabeba,
                },
                "OFPET_EXPERIMENTER/experimenter=0xbebabeba (type=65535, code=11)",
            ),
            (
                OfpError::Unknown {
                    err_type: 99,
                    code: 3,
                },
                "unknown error (type=99, code=3)",
            ),
        ];
        for (error, text) in cases {
            assert_eq!(describe_error(&error), text);
        }
    }

    /// Every code of every type gets a well-formed name that carries its wire numbers.
    #[test]
    fn every_code_has_a_name() {
        let mut all: Vec<OfpError> = Vec::new();
        all.extend(
            HelloFailedCode::ALL
                .iter()
                .map(|c| OfpError::HelloFailed(*c)),
        );
        all.extend(BadRequestCode::ALL.iter().map(|c| OfpError::BadRequest(*c)));
        all.extend(BadActionCode::ALL.iter().map(|c| OfpError::BadAction(*c)));
        all.extend(
            BadInstructionCode::ALL
                .iter()
                .map(|c| OfpError::BadInstruction(*c)),
        );
        all.extend(BadMatchCode::ALL.iter().map(|c| OfpError::BadMatch(*c)));
        all.extend(
            FlowModFailedCode::ALL
                .iter()
                .map(|c| OfpError::FlowModFailed(*c)),
        );
        all.extend(
            GroupModFailedCode::ALL
                .iter()
                .map(|c| OfpError::GroupModFailed(*c)),
        );
        all.extend(
            PortModFailedCode::ALL
                .iter()
                .map(|c| OfpError::PortModFailed(*c)),
        );
        all.extend(
            TableModFailedCode::ALL
                .iter()
                .map(|c| OfpError::TableModFailed(*c)),
        );
        all.extend(
            QueueOpFailedCode::ALL
                .iter()
                .map(|c| OfpError::QueueOpFailed(*c)),
        );
        all.extend(
            SwitchConfigFailedCode::ALL
                .iter()
                .map(|c| OfpError::SwitchConfigFailed(*c)),
        );
        all.extend(
            RoleRequestFailedCode::ALL
                .iter()
                .map(|c| OfpError::RoleRequestFailed(*c)),
        );
        all.extend(
            MeterModFailedCode::ALL
                .iter()
                .map(|c| OfpError::MeterModFailed(*c)),
        );
        all.extend(
            TableFeaturesFailedCode::ALL
                .iter()
                .map(|c| OfpError::TableFeaturesFailed(*c)),
        );
        assert!(all.len() > 100);
        for error in all {
            let text = describe_error(&error);
            let (name, numbers) = text.split_once(' ').unwrap();
            let (type_name, code_name) = name.split_once('/').unwrap();
            assert!(type_name.starts_with("OFPET_"), "{text}");
            assert!(
                code_name.starts_with("OFP") && code_name.contains("C_"),
                "{text}"
            );
            assert!(
                code_name
                    .bytes()
                    .all(|b| b.is_ascii_uppercase() || b == b'_'),
                "{text}"
            );
            let (t, c) = error.type_code();
            assert_eq!(numbers, format!("(type={t}, code={c})"));
        }
    }
}
