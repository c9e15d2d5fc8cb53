// Resolves once MathJax has typeset the page (its startup promise settles after the first typeset).
async () => { await window.MathJax.startup.promise; return true; }
