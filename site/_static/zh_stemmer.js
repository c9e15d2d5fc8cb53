// Sphinx 9.0's Chinese search data ends with `window.Stemmer = ChineseStemmer;` but defines no
// ChineseStemmer (the search page then fails with a ReferenceError). Its Python side stems Latin words
// with the English Snowball stemmer, so the browser does the same: EnglishStemmer is defined by
// language_data.js before any query is stemmed.
window.ChineseStemmer = function () { return new EnglishStemmer(); };
