import { describeFuzz } from '../testing/openapi-fuzz.js';

// Every operation of the served OpenAPI document, fuzzed on postgres (the other database has its own file).
describeFuzz('postgres');
