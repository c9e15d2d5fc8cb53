// One fold: open or not, and its code: 1 shown, 0 hidden, -1 none (checkVisibility: Chromium lays out the
// content of a closed <details>, so a visible box is not enough).
(d) => ({open: d.open, code: d.querySelector('pre') ? (d.querySelector('pre').checkVisibility() ? 1 : 0) : -1})
