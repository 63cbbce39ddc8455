// One colour per platform, for every view and chart: the only place they are written. Nine
// colours at least 3:1 against the page's background (WCAG's floor for a chart's lines and
// marks) and no two near each other (CIEDE2000 distance 20 or more between every pair:
// tests/dashboard/test_browser.py measures them). The style sheet reads them as custom
// properties (`--platform-<name>`, set once by `applyPlatformColors`), so every
// `.swatch[data-platform]` of every view is painted from this map too.

export const PLATFORM_COLORS = {
  x: '#222222', // near black
  instagram: '#b52fa8', // magenta
  linkedin: '#00828c', // teal
  tiktok: '#c46800', // orange
  youtube: '#c4182c', // red
  bluesky: '#1d64d8', // blue
  facebook: '#2b7d36', // green
  threads: '#6e6e6e', // grey (its own mark is black and white)
  pinterest: '#66610a', // olive
};
// A series that is no platform (all platforms together), and names not in the map.
export const TOTAL_COLOR = '#3b4cca';
const FALLBACK = ['#3b4cca', '#8a4b00', '#00695c', '#7a1fa2', '#5d6b00', '#ad1457'];

/** A series' colour: its platform's, the total's, else one of the fallbacks by index. */
export function colorOf(name, i = 0) {
  if (name === 'total') return TOTAL_COLOR;
  return PLATFORM_COLORS[name] || FALLBACK[i % FALLBACK.length];
}

/** The map as the style sheet's custom properties (CSSOM, which the page's policy allows). */
export function applyPlatformColors(root = document.documentElement) {
  for (const [name, color] of Object.entries(PLATFORM_COLORS)) root.style.setProperty(`--platform-${name}`, color);
}
