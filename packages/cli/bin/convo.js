#!/usr/bin/env node
// The built command, behind a file that exists before the build: installs link bins to it.
import '../dist/bin.js';
