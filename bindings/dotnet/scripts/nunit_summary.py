#!/usr/bin/env python3
"""Prints the closing line of an NUnit 2.x TestResult.xml as `N passed, N failed` and
exits non-zero when a test failed or none ran (nunit-console's own summary is not a
format CI recognises)."""
import sys
import xml.etree.ElementTree as ET

root = ET.parse(sys.argv[1]).getroot()
total = int(root.get("total", 0))
failed = int(root.get("failures", 0)) + int(root.get("errors", 0))
skipped = int(root.get("not-run", 0)) + int(root.get("ignored", 0)) + int(root.get("skipped", 0))
passed = total - failed - int(root.get("inconclusive", 0))
print(f"dotnet: {passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed or passed == 0 else 0)
