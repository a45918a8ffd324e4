// SafeHandles over the opaque handles of the C ABI (bindings/ffi/API.md §4). Each one is
// freed exactly once, by ReleaseHandle, with its osb_*_free function. The ABI lets a
// handle be freed while an operation on it is in flight (the operation keeps its own
// reference), so a handle only has to stay alive for the duration of the native call
// that receives it; Bridge.Use does that with DangerousAddRef/DangerousRelease.

using System;
using System.Runtime.InteropServices;

namespace OpenSandbox.Native
{
    internal abstract class NativeHandle : SafeHandle
    {
        protected NativeHandle() : base(IntPtr.Zero, true) { }

        public override bool IsInvalid { get { return handle == IntPtr.Zero; } }

        internal void Set(IntPtr value) { SetHandle(value); }
    }

    /// <summary>The op-layer session (osb_session_*); the package keeps one for the process.</summary>
    internal sealed unsafe class SessionHandle : NativeHandle
    {
        protected override bool ReleaseHandle() { NativeMethods.osb_session_free((OsbSession*)handle); return true; }
    }

    /// <summary>
    /// A handle of the session's registry (a sandbox, manager, run, upload or download):
    /// released with osb_session_release by Dispose or, if the owner forgot, by the finalizer.
    /// </summary>
    internal sealed class SessionEntryHandle : NativeHandle
    {
        public long Id { get { return (long)handle; } }

        public static SessionEntryHandle Of(long id)
        {
            var h = new SessionEntryHandle();
            h.Set((IntPtr)id);
            return h;
        }

        protected override bool ReleaseHandle() { Bridge.SessionRelease((long)handle); return true; }
    }

    internal sealed unsafe class CancelHandle : NativeHandle
    {
        public static CancelHandle New()
        {
            var h = new CancelHandle();
            h.Set((IntPtr)NativeMethods.osb_cancel_new());
            return h;
        }

        /// <summary>Cancels every native operation this token was given; safe after Dispose (no-op).</summary>
        public void Cancel()
        {
            var added = false;
            try
            {
                DangerousAddRef(ref added);
                NativeMethods.osb_cancel_cancel((OsbCancel*)handle);
            }
            catch (ObjectDisposedException)
            {
                // the operation already finished and freed its token
            }
            finally
            {
                if (added) DangerousRelease();
            }
        }

        protected override bool ReleaseHandle() { NativeMethods.osb_cancel_free((OsbCancel*)handle); return true; }
    }
}
