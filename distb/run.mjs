import('./main.mjs').then((m) => m.main(process.argv.slice(2)));
