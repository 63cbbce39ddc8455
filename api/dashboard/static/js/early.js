// The first thing the page runs (an async module, listed first in index.html): when the tab
// is signed in and its address is the overview, the overview's calls start here, at once,
// while the page's other modules and uPlot are still on their way; the overview takes them
// up when it renders (views/overview-calls.js). Anything else waits for js/main.js.
//
// No static import: the browser's zone is read first, and the first use of Intl in a new tab
// (ICU's start, 25-40 ms here) overlaps the fetch of the modules the calls need.

/** Is this address the overview's (main.js's `route`: no fragment, `#/`, `#/overview…`)? */
function isOverview(hash) {
  const fragment = hash.replace(/^#/, '');
  if (new URLSearchParams(fragment.startsWith('/') ? '' : fragment).has('token')) return false;
  const name = fragment.replace(/^\/?/, '').split(/[?/]/)[0];
  return name === '' || name === 'overview';
}

if (isOverview(window.location.hash)) {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC'; // time.js's browserZone()
  const {startEarly, whose} = await import('./views/overview-calls.js');
  const who = whose();
  if (who !== null) startEarly(zone, who);
}
