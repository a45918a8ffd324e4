using System.Reflection;
using System.Runtime.CompilerServices;

[assembly: AssemblyTitle("Alibaba.OpenSandbox")]
[assembly: AssemblyDescription("OpenSandbox SDK for .NET over the opensandbox-ffi native core")]
[assembly: AssemblyVersion("1.1.1.0")]
[assembly: InternalsVisibleTo("Alibaba.OpenSandbox.CodeInterpreter")]
[assembly: InternalsVisibleTo("Alibaba.OpenSandbox.Tests")]
