//! A run's pulled items as the Python objects the handlers take, built here in one
//! pass per batch: output lines become `OutputMessage`s made the way pydantic's
//! `model_construct` makes them (fields in `__dict__`, every field set, no extra, no
//! private) through the C API, without its per-field work, and never validated (the
//! core already parsed them). Lines of a stream with no handler are not built at all.
//! Every other item is its op-layer dict.
//!
//! Sync runs hand each message straight to its handler from here ([`dispatch`]: no
//! list, no Python loop per line); async runs get lists to await handlers over
//! ([`to_groups`]); a run's kept output is built by [`messages`]
//! (bindings/python/python/opensandbox/_bridge.py).

use opensandbox_bindings::stream::{Batch, Item};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyList, PySet, PyString, PyTuple, PyType};

use crate::convert;

/// Group kinds, as the Python layer reads them.
const OTHER: u8 = 0;
const STDOUT: u8 = 1;
const STDERR: u8 = 2;

/// Makes `OutputMessage`s of one class, the way `model_construct` leaves them, with
/// the C API instead of calls through Python: the class's own `tp_alloc` (what
/// `object.__new__` does for a concrete class) and `PyObject_GenericSetAttr` (what
/// `object.__setattr__` does, pydantic's own way around its validating `__setattr__`)
/// on `__dict__` and the three pydantic slots. No argument tuple, no bound method and no
/// wrapper frame per attribute: about a third of the per-line cost of the calls.
pub struct Messages<'py> {
    py: Python<'py>,
    cls: Bound<'py, PyType>,
    alloc: ffi::allocfunc,
    /// Shared by the messages of one call: it already holds every field, so pydantic's
    /// `fields_set.add(name)` on an assignment never changes it.
    fields_set: Bound<'py, PySet>,
    keys: [Bound<'py, PyString>; 3],
    slots: [Bound<'py, PyString>; 4],
    none: Bound<'py, PyAny>,
    /// The last timestamp's int (a batch's lines mostly share their millisecond).
    stamp: Option<(i64, Bound<'py, PyAny>)>,
}

impl<'py> Messages<'py> {
    pub fn new(cls: &Bound<'py, PyType>) -> PyResult<Self> {
        let py = cls.py();
        // Only a class of Python code whose instances are plain (fixed-size) objects
        // with pydantic's slots may be built this way: anything else (a built-in type,
        // a variable-size type) would get an object its own code never set up.
        // SAFETY: `cls` is a live type object.
        let heap =
            unsafe { ffi::PyType_GetFlags(cls.as_type_ptr()) } & ffi::Py_TPFLAGS_HEAPTYPE != 0;
        if !heap
            || cls.getattr("__itemsize__")?.extract::<usize>()? != 0
            || !cls.hasattr("__pydantic_fields_set__")?
        {
            return Err(PyTypeError::new_err(format!(
                "{} is not a pydantic model class",
                cls.name()?
            )));
        }
        // SAFETY: `cls` is a live heap type, which answers `PyType_GetSlot` on every
        // supported version; a class without its own `tp_alloc` gets the generic one,
        // as CPython does.
        let alloc = unsafe {
            let slot = ffi::PyType_GetSlot(cls.as_type_ptr(), ffi::Py_tp_alloc);
            if slot.is_null() {
                ffi::PyType_GenericAlloc as ffi::allocfunc
            } else {
                std::mem::transmute::<*mut std::ffi::c_void, ffi::allocfunc>(slot)
            }
        };
        let keys = [
            PyString::intern(py, "text"),
            PyString::intern(py, "timestamp"),
            PyString::intern(py, "is_error"),
        ];
        let fields_set = PySet::new(py, keys.iter())?;
        Ok(Messages {
            py,
            cls: cls.clone(),
            alloc,
            fields_set,
            keys,
            slots: [
                PyString::intern(py, "__dict__"),
                PyString::intern(py, "__pydantic_fields_set__"),
                PyString::intern(py, "__pydantic_extra__"),
                PyString::intern(py, "__pydantic_private__"),
            ],
            none: py.None().into_bound(py),
            stamp: None,
        })
    }

    fn timestamp(&mut self, ts: i64) -> PyResult<Bound<'py, PyAny>> {
        if let Some((last, obj)) = &self.stamp {
            if *last == ts {
                return Ok(obj.clone());
            }
        }
        let obj = ts.into_pyobject(self.py)?.into_any();
        self.stamp = Some((ts, obj.clone()));
        Ok(obj)
    }

    /// `object.__setattr__(obj, self.slots[slot], value)` without the call.
    fn set(&self, obj: &Bound<'py, PyAny>, slot: usize, value: &Bound<'py, PyAny>) -> PyResult<()> {
        // SAFETY: three live objects; the call borrows them (the slot takes its own
        // reference of `value`).
        let r = unsafe {
            ffi::PyObject_GenericSetAttr(obj.as_ptr(), self.slots[slot].as_ptr(), value.as_ptr())
        };
        if r < 0 {
            Err(PyErr::fetch(self.py))
        } else {
            Ok(())
        }
    }

    pub fn make(&mut self, text: &str, ts: i64, is_error: bool) -> PyResult<Bound<'py, PyAny>> {
        let text = PyString::new(self.py, text);
        self.make_of(text.as_any(), ts, is_error)
    }

    /// [`Messages::make`] of a Python `str` already made.
    fn make_of(
        &mut self,
        text: &Bound<'py, PyAny>,
        ts: i64,
        is_error: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let stamp = self.timestamp(ts)?;
        let d = PyDict::new(self.py);
        d.set_item(&self.keys[0], text)?;
        d.set_item(&self.keys[1], stamp)?;
        d.set_item(&self.keys[2], PyBool::new(self.py, is_error))?;
        // SAFETY: `alloc` is the class's allocator, called as `object.__new__` does;
        // it returns a new reference or NULL with an exception set.
        let m = unsafe {
            Bound::from_owned_ptr_or_err(self.py, (self.alloc)(self.cls.as_type_ptr(), 0))?
        };
        self.set(&m, 0, d.as_any())?;
        self.set(&m, 1, self.fields_set.as_any())?;
        self.set(&m, 2, &self.none)?;
        self.set(&m, 3, &self.none)?;
        Ok(m)
    }
}

/// `gc.isenabled`, `gc.disable` and `gc.enable`.
struct GcFns {
    isenabled: Py<PyAny>,
    disable: Py<PyAny>,
    enable: Py<PyAny>,
}

static GC_FNS: PyOnceLock<GcFns> = PyOnceLock::new();

/// The cyclic collector paused while a batch of messages is built into a list, and
/// resumed when dropped (if it was running). Each message and its `__dict__` are
/// tracked containers: building thousands of them that all stay alive otherwise runs
/// a young-generation collection every 700 allocations, each one walking every
/// message built so far (a fifth of an async run's time was the collector's). Nothing
/// in between runs Python code or releases the GIL, so no other thread sees the pause;
/// the collector still sees every message afterwards.
struct GcPause<'py> {
    enable: Option<Bound<'py, PyAny>>,
}

impl<'py> GcPause<'py> {
    fn new(py: Python<'py>) -> PyResult<Self> {
        let fns = GC_FNS.get_or_try_init(py, || {
            let gc = py.import("gc")?;
            Ok::<_, PyErr>(GcFns {
                isenabled: gc.getattr("isenabled")?.unbind(),
                disable: gc.getattr("disable")?.unbind(),
                enable: gc.getattr("enable")?.unbind(),
            })
        })?;
        if !fns.isenabled.bind(py).call0()?.is_truthy()? {
            return Ok(GcPause { enable: None });
        }
        fns.disable.bind(py).call0()?;
        Ok(GcPause {
            enable: Some(fns.enable.bind(py).clone()),
        })
    }
}

impl Drop for GcPause<'_> {
    fn drop(&mut self) {
        if let Some(enable) = self.enable.take() {
            if let Err(e) = enable.call0() {
                e.write_unraisable(enable.py(), None);
            }
        }
    }
}

/// Calls the handlers of one pulled batch in item order, on the calling thread:
/// each output line becomes an `OutputMessage` handed straight to `on_stdout` /
/// `on_stderr` (no list, no Python loop; lines of a stream without a handler are not
/// built), every other item goes as its dict to `on_other`. Returns `done`. A
/// handler's exception stops the batch and propagates unchanged.
pub fn dispatch<'py>(
    py: Python<'py>,
    batch: Batch,
    cls: &Bound<'py, PyType>,
    on_stdout: Option<&Bound<'py, PyAny>>,
    on_stderr: Option<&Bound<'py, PyAny>>,
    on_other: &Bound<'py, PyAny>,
) -> PyResult<bool> {
    let mut messages = Messages::new(cls)?;
    for item in batch.events {
        match item {
            Item::Output {
                stderr: is_err,
                text,
                timestamp,
            } => {
                let Some(handler) = (if is_err { on_stderr } else { on_stdout }) else {
                    continue;
                };
                let m = messages.make(&text, timestamp, is_err)?;
                handler.call1((m,))?;
            }
            Item::Json(v) => {
                on_other.call1((convert::to_py(py, &v)?,))?;
            }
        }
    }
    Ok(batch.done)
}

/// A list of `OutputMessage`s of one stream from its texts and timestamps (the kept
/// output of a run's outcome).
pub fn messages<'py>(
    cls: &Bound<'py, PyType>,
    texts: &Bound<'py, PyList>,
    stamps: &Bound<'py, PyList>,
    is_error: bool,
) -> PyResult<Bound<'py, PyList>> {
    let py = cls.py();
    if texts.len() != stamps.len() {
        return Err(PyValueError::new_err(format!(
            "{} texts but {} timestamps",
            texts.len(),
            stamps.len()
        )));
    }
    let mut messages = Messages::new(cls)?;
    let _gc = GcPause::new(py)?;
    let out = PyList::empty(py);
    for (t, ts) in texts.iter().zip(stamps.iter()) {
        if !t.is_instance_of::<PyString>() {
            return Err(PyTypeError::new_err("an output text is not a str"));
        }
        out.append(messages.make_of(&t, ts.extract::<i64>()?, is_error)?)?;
    }
    Ok(out)
}

/// `(groups, done)`: `groups` a list of `(kind, payload)` in item order, kind 1 / 2 a
/// list of stdout / stderr messages (consecutive lines of one stream), kind 0 one
/// other item as a dict. Output of a stream whose flag is false is dropped.
pub fn to_groups<'py>(
    py: Python<'py>,
    batch: Batch,
    cls: &Bound<'py, PyType>,
    stdout: bool,
    stderr: bool,
) -> PyResult<Bound<'py, PyTuple>> {
    let mut messages = Messages::new(cls)?;
    let _gc = GcPause::new(py)?;
    let groups = PyList::empty(py);
    // The open group of output lines: its kind and its messages.
    let mut open: Option<(u8, Bound<'py, PyList>)> = None;
    for item in batch.events {
        match item {
            Item::Output {
                stderr: is_err,
                text,
                timestamp,
            } => {
                if !(if is_err { stderr } else { stdout }) {
                    continue;
                }
                let kind = if is_err { STDERR } else { STDOUT };
                let m = messages.make(&text, timestamp, is_err)?;
                match &open {
                    Some((k, list)) if *k == kind => list.append(m)?,
                    _ => {
                        if let Some((k, list)) = open.take() {
                            groups.append((k, list))?;
                        }
                        open = Some((kind, PyList::new(py, [m])?));
                    }
                }
            }
            Item::Json(v) => {
                if let Some((k, list)) = open.take() {
                    groups.append((k, list))?;
                }
                groups.append((OTHER, convert::to_py(py, &v)?))?;
            }
        }
    }
    if let Some((k, list)) = open.take() {
        groups.append((k, list))?;
    }
    PyTuple::new(
        py,
        [
            groups.into_any(),
            batch.done.into_pyobject(py)?.to_owned().into_any(),
        ],
    )
}
