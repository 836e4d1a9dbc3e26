window.iosimErrors = [];
window.iosimNote = function (message) {
  window.iosimErrors.push(String(message));
  if (window.iosimUpdateStatus) window.iosimUpdateStatus();
};
window.addEventListener('error', function (e) { window.iosimNote(e.message || e); });
(function () {
  var consoleError = console.error;
  console.error = function () {
    window.iosimNote(Array.prototype.map.call(arguments, String).join(' '));
    consoleError.apply(console, arguments);
  };
})();
