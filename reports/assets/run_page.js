// The page of one run (reports/run_page.cpp): its charts are SVG written by iosim; this only checks
// that each drew something and marks the result on <body> (tests/run_browser_test.sh reads it).
(function () {
  var charts = document.querySelectorAll('svg.chart');
  var drawn = 0;
  charts.forEach(function (svg) {
    var box = svg.getBBox();
    if (box.width > 0 && box.height > 0 && svg.querySelectorAll('line, polyline, rect, circle').length > 0) {
      drawn += 1;
    }
  });
  window.iosimUpdateStatus = function () {
    var body = document.body;
    body.dataset.chartsExpected = String(charts.length);
    body.dataset.chartsDrawn = String(drawn);
    body.dataset.errors = String(window.iosimErrors.length);
    if (window.iosimErrors.length > 0) body.dataset.errorText = window.iosimErrors.join(' | ');
    body.dataset.status = window.iosimErrors.length === 0 && drawn === charts.length && drawn > 0 ? 'ok' : 'failed';
  };
  window.iosimUpdateStatus();
})();
