//! Wire models, camelCase (lifecycle, egress) or snake_case (execd) as the protocol has
//! them. Every model ignores unknown fields and every state is an open set, so a newer
//! server never breaks an older client.

pub mod egress;
pub mod execd;
pub mod isolated;
pub mod lifecycle;
pub mod templates;
pub(crate) mod time;
pub mod vault;

pub use egress::*;
pub use execd::*;
pub use isolated::*;
pub use lifecycle::*;
pub use templates::*;
pub use vault::*;
