// What a site page shows after load (and after MathJax has typeset it): links, assets, ids, images, math,
// the prose without code, the language switch, prev/next links, the Colab badge, outputs and folds.
() => {
  const article = document.querySelector('article') || document.body;
  const prose = article.cloneNode(true);
  prose.querySelectorAll('pre, code, .highlight, script, .cell_output').forEach(e => e.remove());
  const maths = [...document.querySelectorAll('.math')];
  const abs = a => a.href;
  // Shown and inside the viewport (a closed sidebar drawer sits off-screen to the left).
  const onScreen = e => { const r = e.getBoundingClientRect();
                          return e.checkVisibility() && r.width > 0 && r.right > 0 && r.left < innerWidth; };
  return {
    links: [...document.querySelectorAll('a[href]')].map(abs),
    assets: [...document.querySelectorAll('img[src], link[href], script[src]')]
              .map(e => e.src || e.href),
    ids: [...document.querySelectorAll('[id], a[name]')].map(e => e.id || e.name),
    images: [...document.querySelectorAll('img')]
              .map(i => ({src: i.currentSrc || i.src, ok: i.complete && i.naturalWidth > 0})),
    outputImages: document.querySelectorAll('.cell_output img').length,
    explorerNotes: document.querySelectorAll('.cell_output .explorer-note').length,
    folded: document.querySelectorAll('details.hide.above-input:not([open])').length,
    math: maths.length,
    mathRendered: maths.filter(m => m.querySelector('mjx-container') && !m.querySelector('mjx-merror')).length,
    proseText: prose.innerText,
    bodyText: document.body.innerText,
    langSwitch: [...document.querySelectorAll('a.lang-switch-link')].map(abs),
    langSwitchVisible: [...document.querySelectorAll('a.lang-switch-link')].filter(onScreen).length,
    prev: [...document.querySelectorAll('a.prev-page')].map(abs),
    next: [...document.querySelectorAll('a.next-page')].map(abs),
    colab: [...document.querySelectorAll('a[href^="https://colab.research.google.com/"] img')]
             .map(i => ({href: i.closest('a').href, ok: i.complete && i.naturalWidth > 0})),
  };
}
