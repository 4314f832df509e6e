// Opens report pages in headless Chromium and measures what a user waits for: time until the page
// has drawn (navigation to body[data-ready]), and the median time of a timeline redraw (21 zooms
// in and out). Used by tests/bench/report_bench.sh; not a test (no assertions on time).
//
//   node bench_report.mjs report.html [more.html ...]
import { launchBrowser, openPage } from './browser.mjs';

const browser = await launchBrowser({ viewport: { width: 1600, height: 1000 } });
for (const file of process.argv.slice(2)) {
  const opens = [];
  let redraw = 0;
  for (let run = 0; run < 3; ++run) {
    const t0 = performance.now();
    const page = await openPage(browser.context, file);
    await page.waitForSelector('body[data-ready="true"]');
    opens.push(performance.now() - t0);
    redraw = await page.evaluate(() => {
      const tl = window.shapetrace.app.timeline;
      const times = [];
      for (let i = 0; i < 21; ++i) {
        const t = performance.now();
        tl.zoom(i % 2 ? 2 : 0.5);
        times.push(performance.now() - t);
      }
      return times.sort((a, b) => a - b)[10];
    });
    await page.close();
  }
  opens.sort((a, b) => a - b);
  console.log(`${file}: open ${opens[1].toFixed(0)} ms (median of 3), redraw ${redraw.toFixed(1)} ms (median of 21)`);
}
await browser.close();
