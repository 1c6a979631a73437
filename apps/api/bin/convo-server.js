#!/usr/bin/env -S node --max-semi-space-size=8 --heap-growing-percent=50 --no-allocation-site-pretenuring
// The built command, behind a file that exists before the build: installs link bins to it.
import '../dist/bin.js';
