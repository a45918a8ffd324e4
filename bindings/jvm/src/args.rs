//! Typed access to the JSON arguments the Java side sends, reporting missing or
//! mistyped arguments as `invalid_argument` errors that name the op and the argument.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::protocol::Failure;

/// The arguments of one request.
pub struct Args {
    op: String,
    map: Map<String, Value>,
}

impl Args {
    pub fn new(op: &str, value: Value) -> Args {
        let map = match value {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        Args {
            op: op.to_owned(),
            map,
        }
    }

    fn bad(&self, name: &str, want: &str) -> Failure {
        Failure::Driver(format!("{}: argument {name} must be {want}", self.op))
    }

    /// Whether the argument is present (even as null).
    pub fn has(&self, name: &str) -> bool {
        self.map.contains_key(name)
    }

    pub fn str(&self, name: &str) -> Result<String, Failure> {
        self.opt_str(name)?
            .ok_or_else(|| self.bad(name, "a string (required)"))
    }

    pub fn opt_str(&self, name: &str) -> Result<Option<String>, Failure> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(self.bad(name, "a string")),
        }
    }

    pub fn opt_u64(&self, name: &str) -> Result<Option<u64>, Failure> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or_else(|| self.bad(name, "a non-negative integer")),
        }
    }

    pub fn opt_i64(&self, name: &str) -> Result<Option<i64>, Failure> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_i64()
                .map(Some)
                .ok_or_else(|| self.bad(name, "an integer")),
        }
    }

    pub fn u64(&self, name: &str) -> Result<u64, Failure> {
        self.opt_u64(name)?
            .ok_or_else(|| self.bad(name, "a non-negative integer (required)"))
    }

    pub fn opt_u32(&self, name: &str) -> Result<Option<u32>, Failure> {
        match self.opt_u64(name)? {
            None => Ok(None),
            Some(v) => u32::try_from(v)
                .map(Some)
                .map_err(|_| self.bad(name, "a 32-bit integer")),
        }
    }

    pub fn port(&self, name: &str) -> Result<u16, Failure> {
        u16::try_from(self.u64(name)?).map_err(|_| self.bad(name, "a port number"))
    }

    pub fn bool(&self, name: &str) -> Result<bool, Failure> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(self.bad(name, "a boolean")),
        }
    }

    /// Seconds (integer or fraction) as a duration.
    pub fn opt_secs(&self, name: &str) -> Result<Option<Duration>, Failure> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_f64()
                .filter(|s| s.is_finite() && *s >= 0.0)
                .map(|s| Some(Duration::from_secs_f64(s)))
                .ok_or_else(|| self.bad(name, "a number of seconds")),
        }
    }

    pub fn opt_millis(&self, name: &str) -> Result<Option<Duration>, Failure> {
        Ok(self.opt_u64(name)?.map(Duration::from_millis))
    }

    pub fn str_map(&self, name: &str) -> Result<BTreeMap<String, String>, Failure> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(BTreeMap::new()),
            Some(Value::Object(m)) => m
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) => Ok((k.clone(), s.clone())),
                    _ => Err(self.bad(name, "an object of strings")),
                })
                .collect(),
            Some(_) => Err(self.bad(name, "an object of strings")),
        }
    }

    /// `{key: string | null}` (metadata patches).
    pub fn opt_str_map(&self, name: &str) -> Result<BTreeMap<String, Option<String>>, Failure> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(BTreeMap::new()),
            Some(Value::Object(m)) => m
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) => Ok((k.clone(), Some(s.clone()))),
                    Value::Null => Ok((k.clone(), None)),
                    _ => Err(self.bad(name, "an object of strings or nulls")),
                })
                .collect(),
            Some(_) => Err(self.bad(name, "an object of strings or nulls")),
        }
    }

    pub fn str_list(&self, name: &str) -> Result<Vec<String>, Failure> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| self.bad(name, "a list of strings"))
                })
                .collect(),
            Some(_) => Err(self.bad(name, "a list of strings")),
        }
    }

    /// A list of objects, each wrapped as `Args` for typed access.
    pub fn objects(&self, name: &str) -> Result<Vec<Args>, Failure> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| match v {
                    Value::Object(_) => Ok(Args::new(&format!("{}.{name}[]", self.op), v.clone())),
                    _ => Err(self.bad(name, "a list of objects")),
                })
                .collect(),
            Some(_) => Err(self.bad(name, "a list of objects")),
        }
    }

    /// A nested object as `Args`, if present.
    pub fn object(&self, name: &str) -> Result<Option<Args>, Failure> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(v @ Value::Object(_)) => {
                Ok(Some(Args::new(&format!("{}.{name}", self.op), v.clone())))
            }
            Some(_) => Err(self.bad(name, "an object")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn typed_access_and_errors_name_the_argument() {
        let a = Args::new(
            "x.op",
            json!({"s": "v", "n": 5, "t": 1.5, "m": {"k": "v"}, "p": {"a": null}, "bad": 3}),
        );
        assert_eq!(a.str("s").expect("s"), "v");
        assert_eq!(a.opt_u64("n").expect("n"), Some(5));
        assert_eq!(
            a.opt_secs("t").expect("t"),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(a.str_map("m").expect("m")["k"], "v");
        assert_eq!(a.opt_str_map("p").expect("p")["a"], None);
        assert!(!a.bool("absent").expect("absent bool"));
        match a.str("bad") {
            Err(Failure::Driver(m)) => assert!(m.contains("x.op") && m.contains("bad"), "{m}"),
            other => panic!("expected a driver error, got {other:?}"),
        }
        assert!(a.str("missing").is_err());
    }
}
