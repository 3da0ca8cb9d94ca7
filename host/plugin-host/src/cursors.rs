//! Plugin cursors signed exactly like core list cursors, so clients cannot
//! tell a plugin list from a core list.

use plateau_api::pagination::CursorCodec as CoreCodec;
use plateau_plugin_runtime::{CursorCodec, CursorError, CursorScope};

pub struct SignedCursors(pub CoreCodec);

fn list_name(scope: &CursorScope, list: &str) -> String {
    format!("plugin:{}:{list}", scope.plugin)
}

impl CursorCodec for SignedCursors {
    fn encode(&self, scope: &CursorScope, list: &str, position: &str) -> String {
        let org = scope.organization.as_deref().unwrap_or_default();
        self.0.encode(&list_name(scope, list), org, "", position)
    }

    fn decode(&self, scope: &CursorScope, list: &str, cursor: &str) -> Result<String, CursorError> {
        let org = scope.organization.as_deref().unwrap_or_default();
        self.0
            .decode(cursor, &list_name(scope, list), org, "")
            .ok_or(CursorError::Invalid)
    }
}
