//! OFPT_ERROR reasons (spec 1.3.5 section 7.4.4) and the decoder's error type.

use core::fmt;

/// Declares a `u16`-coded error code enum with lossless conversion from and to the wire value.
macro_rules! error_codes {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $value:expr,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[repr(u16)]
        pub enum $name { $($(#[$vmeta])* $variant = $value,)* }

        impl $name {
            /// Every code of this type, in wire order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            /// The code for a wire value, or `None` if the spec names no such code.
            pub fn from_u16(code: u16) -> Option<Self> {
                match code {
                    $($value => Some($name::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

error_codes!(
    /// OFPET_HELLO_FAILED codes.
    HelloFailedCode { Incompatible = 0, Eperm = 1, }
);
error_codes!(
    /// OFPET_BAD_REQUEST codes.
    BadRequestCode {
        BadVersion = 0, BadType = 1, BadMultipart = 2, BadExperimenter = 3, BadExpType = 4,
        Eperm = 5, BadLen = 6, BufferEmpty = 7, BufferUnknown = 8, BadTableId = 9, IsSlave = 10,
        BadPort = 11, BadPacket = 12, MultipartBufferOverflow = 13,
    }
);
error_codes!(
    /// OFPET_BAD_ACTION codes.
    BadActionCode {
        BadType = 0, BadLen = 1, BadExperimenter = 2, BadExpType = 3, BadOutPort = 4,
        BadArgument = 5, Eperm = 6, TooMany = 7, BadQueue = 8, BadOutGroup = 9,
        MatchInconsistent = 10, UnsupportedOrder = 11, BadTag = 12, BadSetType = 13,
        BadSetLen = 14, BadSetArgument = 15,
    }
);
error_codes!(
    /// OFPET_BAD_INSTRUCTION codes.
    BadInstructionCode {
        UnknownInst = 0, UnsupInst = 1, BadTableId = 2, UnsupMetadata = 3, UnsupMetadataMask = 4,
        BadExperimenter = 5, BadExpType = 6, BadLen = 7, Eperm = 8,
    }
);
error_codes!(
    /// OFPET_BAD_MATCH codes.
    BadMatchCode {
        BadType = 0, BadLen = 1, BadTag = 2, BadDlAddrMask = 3, BadNwAddrMask = 4,
        BadWildcards = 5, BadField = 6, BadValue = 7, BadMask = 8, BadPrereq = 9, DupField = 10,
        Eperm = 11,
    }
);
error_codes!(
    /// OFPET_FLOW_MOD_FAILED codes.
    FlowModFailedCode {
        Unknown = 0, TableFull = 1, BadTableId = 2, Overlap = 3, Eperm = 4, BadTimeout = 5,
        BadCommand = 6, BadFlags = 7,
    }
);
error_codes!(
    /// OFPET_GROUP_MOD_FAILED codes.
    GroupModFailedCode {
        GroupExists = 0, InvalidGroup = 1, WeightUnsupported = 2, OutOfGroups = 3,
        OutOfBuckets = 4, ChainingUnsupported = 5, WatchUnsupported = 6, Loop = 7,
        UnknownGroup = 8, ChainedGroup = 9, BadType = 10, BadCommand = 11, BadBucket = 12,
        BadWatch = 13, Eperm = 14,
    }
);
error_codes!(
    /// OFPET_PORT_MOD_FAILED codes.
    PortModFailedCode { BadPort = 0, BadHwAddr = 1, BadConfig = 2, BadAdvertise = 3, Eperm = 4, }
);
error_codes!(
    /// OFPET_TABLE_MOD_FAILED codes.
    TableModFailedCode { BadTable = 0, BadConfig = 1, Eperm = 2, }
);
error_codes!(
    /// OFPET_QUEUE_OP_FAILED codes.
    QueueOpFailedCode { BadPort = 0, BadQueue = 1, Eperm = 2, }
);
error_codes!(
    /// OFPET_SWITCH_CONFIG_FAILED codes.
    SwitchConfigFailedCode { BadFlags = 0, BadLen = 1, Eperm = 2, }
);
error_codes!(
    /// OFPET_ROLE_REQUEST_FAILED codes.
    RoleRequestFailedCode { Stale = 0, Unsup = 1, BadRole = 2, }
);
error_codes!(
    /// OFPET_METER_MOD_FAILED codes.
    MeterModFailedCode {
        Unknown = 0, MeterExists = 1, InvalidMeter = 2, UnknownMeter = 3, BadCommand = 4,
        BadFlags = 5, BadRate = 6, BadBurst = 7, BadBand = 8, BadBandValue = 9, OutOfMeters = 10,
        OutOfBands = 11,
    }
);
error_codes!(
    /// OFPET_TABLE_FEATURES_FAILED codes.
    TableFeaturesFailedCode {
        BadTable = 0, BadMetadata = 1, BadType = 2, BadLen = 3, BadArgument = 4, Eperm = 5,
    }
);

/// OFPET_EXPERIMENTER error type value.
pub const OFPET_EXPERIMENTER: u16 = 0xffff;

/// An OFPT_ERROR reason: the (type, code) pair of spec 1.3.5 section 7.4.4, typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OfpError {
    HelloFailed(HelloFailedCode),
    BadRequest(BadRequestCode),
    BadAction(BadActionCode),
    BadInstruction(BadInstructionCode),
    BadMatch(BadMatchCode),
    FlowModFailed(FlowModFailedCode),
    GroupModFailed(GroupModFailedCode),
    PortModFailed(PortModFailedCode),
    TableModFailed(TableModFailedCode),
    QueueOpFailed(QueueOpFailedCode),
    SwitchConfigFailed(SwitchConfigFailedCode),
    RoleRequestFailed(RoleRequestFailedCode),
    MeterModFailed(MeterModFailedCode),
    TableFeaturesFailed(TableFeaturesFailedCode),
    /// OFPET_EXPERIMENTER: `exp_type` is the 16-bit experimenter-defined code.
    Experimenter {
        exp_type: u16,
        experimenter: u32,
    },
    /// A (type, code) pair the spec does not define, kept so a received error survives a round trip.
    Unknown {
        err_type: u16,
        code: u16,
    },
}

impl OfpError {
    /// The wire (type, code) pair. For experimenter errors the code is `exp_type`.
    pub fn type_code(&self) -> (u16, u16) {
        match *self {
            OfpError::HelloFailed(c) => (0, c as u16),
            OfpError::BadRequest(c) => (1, c as u16),
            OfpError::BadAction(c) => (2, c as u16),
            OfpError::BadInstruction(c) => (3, c as u16),
            OfpError::BadMatch(c) => (4, c as u16),
            OfpError::FlowModFailed(c) => (5, c as u16),
            OfpError::GroupModFailed(c) => (6, c as u16),
            OfpError::PortModFailed(c) => (7, c as u16),
            OfpError::TableModFailed(c) => (8, c as u16),
            OfpError::QueueOpFailed(c) => (9, c as u16),
            OfpError::SwitchConfigFailed(c) => (10, c as u16),
            OfpError::RoleRequestFailed(c) => (11, c as u16),
            OfpError::MeterModFailed(c) => (12, c as u16),
            OfpError::TableFeaturesFailed(c) => (13, c as u16),
            OfpError::Experimenter { exp_type, .. } => (OFPET_EXPERIMENTER, exp_type),
            OfpError::Unknown { err_type, code } => (err_type, code),
        }
    }

    /// The typed error for a wire (type, code) pair. Experimenter errors get experimenter id 0
    /// (the id travels separately on the wire); pairs the spec does not name become `Unknown`.
    pub fn from_type_code(err_type: u16, code: u16) -> Self {
        let known = match err_type {
            0 => HelloFailedCode::from_u16(code).map(OfpError::HelloFailed),
            1 => BadRequestCode::from_u16(code).map(OfpError::BadRequest),
            2 => BadActionCode::from_u16(code).map(OfpError::BadAction),
            3 => BadInstructionCode::from_u16(code).map(OfpError::BadInstruction),
            4 => BadMatchCode::from_u16(code).map(OfpError::BadMatch),
            5 => FlowModFailedCode::from_u16(code).map(OfpError::FlowModFailed),
            6 => GroupModFailedCode::from_u16(code).map(OfpError::GroupModFailed),
            7 => PortModFailedCode::from_u16(code).map(OfpError::PortModFailed),
            8 => TableModFailedCode::from_u16(code).map(OfpError::TableModFailed),
            9 => QueueOpFailedCode::from_u16(code).map(OfpError::QueueOpFailed),
            10 => SwitchConfigFailedCode::from_u16(code).map(OfpError::SwitchConfigFailed),
            11 => RoleRequestFailedCode::from_u16(code).map(OfpError::RoleRequestFailed),
            12 => MeterModFailedCode::from_u16(code).map(OfpError::MeterModFailed),
            13 => TableFeaturesFailedCode::from_u16(code).map(OfpError::TableFeaturesFailed),
            OFPET_EXPERIMENTER => Some(OfpError::Experimenter {
                exp_type: code,
                experimenter: 0,
            }),
            _ => None,
        };
        known.unwrap_or(OfpError::Unknown { err_type, code })
    }

    /// Shorthand for the most common decode failure: a length field that does not add up.
    pub(crate) const BAD_LEN: OfpError = OfpError::BadRequest(BadRequestCode::BadLen);
}

impl fmt::Display for OfpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (t, c) = self.type_code();
        match self {
            OfpError::Experimenter {
                exp_type,
                experimenter,
            } => write!(
                f,
                "OpenFlow experimenter error {exp_type} (experimenter {experimenter:#010x})"
            ),
            OfpError::Unknown { .. } => write!(f, "OpenFlow error type {t} code {c}"),
            other => write!(f, "OpenFlow error {other:?} (type {t} code {c})"),
        }
    }
}

impl std::error::Error for OfpError {}

/// Why [`crate::decode`] rejected a message, with the xid to answer on (0 if the header was short).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeError {
    pub xid: u32,
    pub error: OfpError,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "xid {}: {}", self.xid, self.error)
    }
}

impl std::error::Error for DecodeError {}
