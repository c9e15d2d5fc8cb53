// Tofu: draw each non-ASCII character of the notebook's text in its element's font and compare it with a
// character no font has (U+10FFFD). A positive control (another such character, U+10FFFB, must compare
// equal; 'A' must not) makes sure the comparison can fail.
() => {
  const root = window.__panel.node;
  const fonts = new Map();  // font -> Map(char -> example text)
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  let node;
  while ((node = walker.nextNode())) {
    const el = node.parentElement;
    if (!el || el.closest('mjx-container, .MathJax, script, style')) continue;
    const cs = getComputedStyle(el);
    const font = `${cs.fontStyle} ${cs.fontWeight} 32px ${cs.fontFamily}`;
    for (const ch of node.data) {
      const cp = ch.codePointAt(0);
      if ((cp >= 0x20 && cp < 0x7f) || /\s/u.test(ch) || /\p{M}|\p{Cf}|\p{Cc}/u.test(ch)) continue;
      if (!fonts.has(font)) fonts.set(font, new Map());
      if (!fonts.get(font).has(ch)) fonts.get(font).set(ch, node.data.trim().slice(0, 60));
    }
  }
  const canvas = document.createElement('canvas');
  canvas.width = 96; canvas.height = 64;
  const ctx = canvas.getContext('2d', {willReadFrequently: true});
  const draw = (font, s) => {
    ctx.clearRect(0, 0, 96, 64);
    ctx.font = font;
    ctx.fillStyle = '#000';
    ctx.fillText(s, 16, 44);
    const data = ctx.getImageData(0, 0, 96, 64).data;
    let h = 0;
    for (let i = 3; i < data.length; i += 4) h = (Math.imul(h, 31) + data[i] + i) | 0;
    return ctx.measureText(s).width.toFixed(2) + ':' + h;
  };
  const boxes = [];
  let checked = 0, control = true;
  for (const [font, chars] of fonts) {
    const missing = draw(font, '\u{10FFFD}');
    // positive control: another character no font has must be caught, or this comparison proves nothing
    if (draw(font, '\u{10FFFB}') !== missing || draw(font, 'A') === missing) control = false;
    for (const [ch, example] of chars) {
      checked += 1;
      if (draw(font, ch) === missing) {
        boxes.push({ch, code: 'U+' + ch.codePointAt(0).toString(16).toUpperCase().padStart(4, '0'), font, example});
      }
    }
  }
  return {checked, fonts: fonts.size, boxes, control};
}
