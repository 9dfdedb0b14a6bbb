/** Entry for running the CLI directly with node (benchmarks, strace). */
import { main } from './main.js';
void main(process.argv.slice(2));
